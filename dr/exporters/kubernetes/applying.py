"""Restoring one object: create it, or compare it with what is there; one outcome with a reason.

Create first: into an empty cluster that is one request per object. Only when the create
answers AlreadyExists is the live object read and compared with the backup, both in
cleaning.normalized() form: equal is UNCHANGED; different is CONFLICT with the paths that
differ, or, with overwrite, a PUT carrying the live resourceVersion (so a concurrent change
is refused, not lost), which is RESTORED. Where the type's objects in the destination were
listed first (surveying.py), a listed object equal to the backup is UNCHANGED with no request,
and a listed one that differs is read without trying the create.

ownerReferences carry the owner's uid, which is new in the destination. Each reference is
rewritten to the live owner's uid; an owner that does not exist yet (cert-manager's Secrets
are restored before their Certificates, on purpose) is left out at create and set by
finish_owners() once every level is done, so the restored object ends up as it was.
"""

from __future__ import annotations

import threading
from typing import Iterator

from dr.contract import Outcome, OutcomeStatus
from dr.exporters.kubernetes.admission import refused_by_webhook
from dr.exporters.kubernetes.cleaning import differences, for_create, normalized
from dr.exporters.kubernetes.requesting import Api, KubeError
from dr.exporters.kubernetes.resources import ResourceType, item_name
from dr.exporters.kubernetes.surveying import Key, fingerprint, survey

MERGE_PATCH = "application/merge-patch+json"


def _group_of(api_version: str) -> str:
    return api_version.split("/", 1)[0] if "/" in api_version else ""


class Applier:
    def __init__(self, api: Api, *, overwrite: bool, types_by_kind: dict[tuple[str, str], ResourceType]):
        self.api, self.overwrite = api, overwrite
        self.types_by_kind = types_by_kind  # (group, Kind) -> type, to find an owner's path
        self._uids: dict[tuple, str | None] = {}
        self._lock = threading.Lock()
        self.deferred: list[tuple[ResourceType, dict, list[dict]]] = []
        self._listed: dict[tuple[str, str], dict[Key, bytes]] = {}  # type key -> what the survey found

    def survey(self, rtype: ResourceType, expected: int) -> str:
        """List the type's objects in the destination before its first create (surveying.py);
        "" when the type is surveyed, else why it goes object by object."""
        if rtype.key in self._listed:
            return ""
        found, why = survey(self.api, rtype, expected)
        if found is not None:
            self._listed[rtype.key] = found
        return why

    def apply(self, rtype: ResourceType, obj: dict, held: list | None = None) -> Outcome | None:
        """The object's outcome; None when an admission webhook refused it and `held` takes it
        ((type, object, refusal) appended, to be tried again: admission.py)."""
        item = item_name(rtype, obj)
        body = for_create(rtype, obj)
        wanted = list(body["metadata"].get("ownerReferences") or [])
        body["metadata"]["ownerReferences"], missing = self._resolve(rtype, obj, wanted)
        if not body["metadata"]["ownerReferences"]:
            del body["metadata"]["ownerReferences"]
        try:
            outcome = self._create_or_compare(rtype, body, item)
        except KubeError as exc:
            if held is not None and refused_by_webhook(exc):
                held.append((rtype, obj, exc))  # list.append is atomic: workers share `held`
                return None
            return Outcome(item, OutcomeStatus.FAILED, str(exc))
        if missing and outcome.status in (OutcomeStatus.RESTORED, OutcomeStatus.UNCHANGED):
            with self._lock:
                self.deferred.append((rtype, body, wanted))
            outcome.reason += f"; owner {', '.join(missing)} not there yet: reference set once it is restored"
        return outcome

    def _create_or_compare(self, rtype: ResourceType, body: dict, item: str) -> Outcome:
        namespace, name = body["metadata"].get("namespace"), body["metadata"]["name"]
        listed = self._listed.get(rtype.key)
        seen = None if listed is None else listed.get((namespace if rtype.namespaced else None, name))
        if seen is not None and seen == fingerprint(rtype, body):
            return Outcome(item, OutcomeStatus.UNCHANGED, "exists and matches the backup")
        live = None if seen is None else self.api.get(rtype.path(namespace, name), what=f"read {item}")
        if live is None:  # not listed, or deleted since the list
            try:
                # the created object is not read: parsing every answer cost a JSON decode per object
                self.api.request("post", rtype.path(namespace), body=body, what=f"create {item}", parse=False)
                return Outcome(item, OutcomeStatus.RESTORED, "created")
            except KubeError as exc:
                if exc.status != 409:
                    raise
            live = self.api.get(rtype.path(namespace, name), what=f"read {item}")
            if live is None:
                raise KubeError(409, "Conflict", f"create {item}: exists, then vanished before it could be compared")
        return self._compare(rtype, body, live, item)

    def _compare(self, rtype: ResourceType, body: dict, live: dict, item: str) -> Outcome:
        live.setdefault("apiVersion", rtype.api_version)
        live.setdefault("kind", rtype.kind)
        wanted, have = normalized(rtype, body), normalized(rtype, live)
        if wanted == have:
            return Outcome(item, OutcomeStatus.UNCHANGED, "exists and matches the backup")
        where = ", ".join(differences(wanted, have))
        if not self.overwrite:
            return Outcome(item, OutcomeStatus.CONFLICT, f"exists and differs at {where}; --overwrite replaces it")
        body = dict(body, metadata=dict(body["metadata"], resourceVersion=live["metadata"].get("resourceVersion")))
        namespace = body["metadata"].get("namespace")
        self.api.request("put", rtype.path(namespace, body["metadata"]["name"]), body=body, what=f"replace {item}")
        return Outcome(item, OutcomeStatus.RESTORED, f"replaced (differed at {where})")

    # -- owners ---------------------------------------------------------------------------------
    def _resolve(self, rtype: ResourceType, obj: dict, refs: list[dict]) -> tuple[list[dict], list[str]]:
        """(references with live uids, owners not found yet)."""
        namespace = obj["metadata"].get("namespace")
        resolved, missing = [], []
        for ref in refs:
            uid = self._owner_uid(ref, namespace if rtype.namespaced else None)
            if uid:
                resolved.append(dict(ref, uid=uid))
            else:
                missing.append(f"{ref.get('kind')}/{ref.get('name')}")
        return resolved, missing

    def _owner_uid(self, ref: dict, namespace: str | None) -> str | None:
        owner_type = self.types_by_kind.get((_group_of(str(ref.get("apiVersion", ""))), ref.get("kind", "")))
        if owner_type is None:
            return None
        key = (owner_type.key, namespace if owner_type.namespaced else None, ref.get("name"))
        with self._lock:
            if self._uids.get(key):
                return self._uids[key]
        live = self.api.get(owner_type.path(key[1], ref.get("name")), what=f"read owner {ref.get('kind')}")
        uid = ((live or {}).get("metadata") or {}).get("uid")
        with self._lock:
            self._uids[key] = uid
        return uid

    def finish_owners(self) -> Iterator[Outcome]:
        """Set the ownerReferences left out at create; a failure is its own outcome."""
        for rtype, body, wanted in self.deferred:
            item = item_name(rtype, body)
            resolved, missing = self._resolve(rtype, body, wanted)
            if missing:
                yield Outcome(item, OutcomeStatus.FAILED, f"owner {', '.join(missing)} still missing: "
                                                          "restored without that ownerReference")
                continue
            try:
                self.api.request("patch", rtype.path(body["metadata"].get("namespace"), body["metadata"]["name"]),
                                 body={"metadata": {"ownerReferences": resolved}}, content_type=MERGE_PATCH,
                                 what=f"set ownerReferences of {item}")
            except KubeError as exc:
                yield Outcome(item, OutcomeStatus.FAILED, str(exc))
