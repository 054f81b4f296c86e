"""The restore: levels in order (ordering.py), each level's objects in parallel (applying.py).

Content is read artifact by artifact into a spooled file first: the reader verifies an
artifact's digest only at its end, and nothing from an artifact that fails verification may
reach the cluster. Objects are then streamed to a bounded pool, so memory stays flat.
A dry run reads and orders everything the same way and yields PLANNED outcomes in restore
order, without connecting to any cluster.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import queue
import secrets
import shutil
import tempfile
import time
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Callable, Iterable, Iterator

from dr.contract import ContentReader, Outcome, OutcomeStatus, RestoreRequest
from dr.exporters.kubernetes import helm_releases
from dr.exporters.kubernetes.admission import DELAYS, final_reason, retried_reason
from dr.exporters.kubernetes.applying import Applier
from dr.exporters.kubernetes import volumedata
from dr.exporters.kubernetes.batches import KIND, SCANNED_KIND
from dr.exporters.kubernetes.cleaning import normalized
from dr.exporters.kubernetes.discovering import served_plurals
from dr.exporters.kubernetes.ordering import CRDS, Level, TypeInfo, levels
from dr.exporters.kubernetes.referencing import derived
from dr.exporters.kubernetes.remapping import Remap, RemapError
from dr.exporters.kubernetes.requesting import Api, KubeError
from dr.exporters.kubernetes.resources import ResourceType, item_name
from dr.model.artifacts import Artifact


def bounded(pool: ThreadPoolExecutor, fn: Callable, items: Iterable, limit: int) -> Iterator:
    """fn(*item) for every item on `pool`, at most `limit` in flight; results as they finish.

    Each future puts itself on a queue when done (one callback), rather than waiting on every
    pending future for each item (concurrent.futures.wait installs a waiter on all of them)."""
    finished: queue.SimpleQueue[Future] = queue.SimpleQueue()
    in_flight = 0
    for item in items:
        if in_flight >= limit:
            yield finished.get().result()
            in_flight -= 1
        pool.submit(fn, *item).add_done_callback(finished.put)
        in_flight += 1
    for _ in range(in_flight):
        yield finished.get().result()


class Restore:
    def __init__(self, options, request: RestoreRequest, reader: ContentReader,
                 connect: Callable[[], Api], log: Callable[[str], None] = lambda m: None):
        self.options, self.request, self.reader = options, request, reader
        self.connect, self.log = connect, log
        self.unserved: dict[str, str] = {}  # qualified type -> why it cannot be restored
        self.notes: dict[str, str] = {}  # item -> what the remap left alone (a warning on its outcome)
        self._served: dict[tuple[str, str], set[str]] = {}

    def run(self, artifacts: list[Artifact]) -> Iterator[Outcome]:
        try:
            remap = Remap.parse(self.request.remap)
        except RemapError as exc:
            yield Outcome("remap", OutcomeStatus.FAILED, str(exc))
            return
        objects = [a for a in artifacts if a.kind == KIND]
        plan = levels(_type_infos(objects).values(), derived(objects))
        for warning in (w for level in plan for w in level.warnings):
            self.log(warning)
        by_type: dict[str, list[Artifact]] = {}
        for artifact in sorted(objects, key=lambda a: a.identity):
            by_type.setdefault(ResourceType.from_meta(artifact.meta).qualified, []).append(artifact)
        if self.request.dry_run:
            yield from self._planned(plan, by_type, remap)
        elif not (yield from self._restore(plan, by_type, remap)):
            return  # no destination: one FAILED outcome says so, nothing else was attempted
        yield from (_not_restored(a) for a in artifacts if a.kind != KIND)

    # -- dry run ------------------------------------------------------------------------------------
    def _planned(self, plan: list[Level], by_type: dict[str, list[Artifact]], remap: Remap) -> Iterator[Outcome]:
        for level in plan:
            for info in level.types:
                why = _why(level.after[info.rtype.qualified])
                for artifact in by_type[info.rtype.qualified]:
                    for item, obj in self._objects(artifact, info.rtype, remap):
                        if obj is None:
                            yield item
                            continue
                        yield self._noted(Outcome(item, OutcomeStatus.PLANNED,
                                      f"level {level.number + 1} of {len(plan)}: create, or compare with the "
                                      f"existing object ({why})"))

    # -- the real thing -----------------------------------------------------------------------------
    def _restore(self, plan: list[Level], by_type: dict[str, list[Artifact]], remap: Remap):
        """Yields the outcomes; returns False when the destination cannot be reached."""
        try:
            api = self._api = self.connect()
        except Exception as exc:  # bad kubeconfig, unknown context, unreachable server
            yield Outcome("destination", OutcomeStatus.FAILED,
                          f"nothing restored: cannot connect to {self.request.to}: {exc}")
            return False
        types_by_kind = {(a.rtype.group, a.rtype.kind): a.rtype for level in plan for a in level.types}
        applier = Applier(api, overwrite=self.request.overwrite, types_by_kind=types_by_kind)
        limit = 4 * self.options.parallelism
        with ThreadPoolExecutor(self.options.parallelism, thread_name_prefix="kube-restore") as pool:
            for level in plan:
                crds: list[dict] = []
                work = self._level_items(level, by_type, remap, crds, applier)
                yield from self._apply_level(pool, applier, work, limit)
                if crds:
                    self._wait_for_crds(api, crds)
        yield from applier.finish_owners()
        return True

    def _apply_level(self, pool: ThreadPoolExecutor, applier: Applier, work: Iterator[tuple], limit: int):
        """The level's outcomes; creates a webhook refused are tried again after the rest (admission.py)."""
        held: list[tuple[ResourceType, dict, KubeError]] = []
        refusals: dict[str, int] = {}
        yield from (o for o in bounded(pool, self._apply_one(applier, held), work, limit) if o is not None)
        for delay in DELAYS:
            if not held:
                return
            for rtype, obj, _ in held:
                item = item_name(rtype, obj)
                refusals[item] = refusals.get(item, 0) + 1
            again = [(rtype, obj, None) for rtype, obj, _ in held]
            held.clear()
            time.sleep(delay)
            for outcome in bounded(pool, self._apply_one(applier, held), again, limit):
                if outcome is not None:
                    outcome.reason = retried_reason(outcome.reason, refusals.get(outcome.item, 0))
                    yield outcome
        for rtype, obj, exc in held:
            item = item_name(rtype, obj)
            yield self._noted(Outcome(item, OutcomeStatus.FAILED, final_reason(exc, refusals.get(item, 0) + 1)))

    def _apply_one(self, applier: Applier, held: list | None = None) -> Callable:
        def run(rtype: ResourceType, obj: dict | None, ready: Outcome | None) -> Outcome | None:
            if obj is None:
                return ready
            try:
                outcome = applier.apply(rtype, obj, held)
                return None if outcome is None else self._noted(outcome)
            except Exception as exc:  # a bug or a malformed object: this item fails, not the restore
                return Outcome(item_name(rtype, obj), OutcomeStatus.FAILED, f"unexpected error: {exc!r}")
        return run

    def _noted(self, outcome: Outcome) -> Outcome:
        note = self.notes.get(outcome.item)
        if note:
            outcome.reason = f"{outcome.reason}; {note}" if outcome.reason else note
        return outcome

    def _level_items(self, level: Level, by_type, remap: Remap, crds: list[dict],
                     applier: Applier) -> Iterator[tuple]:
        """(type, object, None) to apply, or (type, None, outcome) already decided."""
        for info in level.types:
            rtype = info.rtype
            blocked = self._blocked(rtype)
            if not blocked and rtype.qualified != CRDS:
                # CRDs are few and can be megabytes each: compared one by one, not listed
                expected = sum(int(a.meta.get("objects") or 1) for a in by_type[rtype.qualified])
                why = applier.survey(rtype, expected)
                if why:
                    self.log(f"restore: {rtype.qualified}: {why}: each object is created, "
                             "and read and compared if it exists")
            for artifact in by_type[rtype.qualified]:
                for item, obj in self._objects(artifact, rtype, remap):
                    if obj is None:
                        yield rtype, None, item
                    elif blocked:
                        yield rtype, None, Outcome(item, OutcomeStatus.FAILED, blocked)
                    else:
                        if rtype.qualified == CRDS:
                            crds.append(obj)
                        yield rtype, obj, None

    def _blocked(self, rtype: ResourceType) -> str | None:
        if rtype.qualified in self.unserved:
            return self.unserved[rtype.qualified]
        key = (rtype.group, rtype.version)
        if key not in self._served:
            try:
                self._served[key] = served_plurals(self._api, *key)
            except KubeError as exc:
                return f"cannot read the destination's discovery: {exc}"
        if rtype.plural not in self._served[key]:
            return f"the destination does not serve {rtype.version} {rtype.qualified} (its CRD missing or not served)"
        return None

    def _objects(self, artifact: Artifact, rtype: ResourceType, remap: Remap) -> Iterator[tuple]:
        """(item, object) per object of a verified artifact; (Outcome, None) if it cannot be read."""
        try:
            spool = self._verified(artifact)
        except Exception as exc:  # integrity, decryption: the whole artifact is unusable
            yield Outcome(f"{artifact.identity} ({artifact.meta.get('objects', '?')} objects)",
                          OutcomeStatus.FAILED, f"cannot read the artifact: {exc}"), None
            return
        with spool:
            for line in spool:
                if line.strip():
                    notes: list[str] = []
                    obj = remap.apply(rtype, json.loads(line), notes)
                    item = item_name(rtype, obj)
                    if notes:
                        self.notes[item] = self._left_alone(item, notes)
                    yield item, obj

    def _left_alone(self, item: str, notes: list[str]) -> str:
        """What --namespace-map did not rewrite in one object: logged, and added to its outcome."""
        shown = "; ".join(notes[:5]) + (f"; and {len(notes) - 5} more" if len(notes) > 5 else "")
        note = f"warning: --namespace-map left {shown}: check whether it should follow the mapping"
        self.log(f"{item}: {note}")
        return note

    def _verified(self, artifact: Artifact):
        spool = tempfile.SpooledTemporaryFile(max_size=8 << 20)
        try:
            with self.reader.open(artifact) as stream:
                shutil.copyfileobj(stream, spool, 1 << 20)
        except BaseException:
            spool.close()
            raise
        spool.seek(0)
        return spool

    # -- a drill's comparison ---------------------------------------------------------------------
    def fingerprints(self, artifacts: list[Artifact]) -> Iterator[tuple[str, str, str]]:
        """(identity, the destination's fingerprint, the backup's) per objects artifact, for dr
        drill: every object as the restore sends it (remapped) and as the destination holds it
        now, read back, both in cleaning.normalized() form: what the API server and the
        destination's controllers assign (uid, resourceVersion, creationTimestamp, generation,
        managedFields, selfLink, status, ownerReference uids, allocated IPs ...) left out. ""
        when none of an artifact's objects is there; an unreadable artifact is left out."""
        remap = Remap.parse(self.request.remap)
        api = self.connect()
        key = secrets.token_bytes(32)

        def live(rtype: ResourceType, obj: dict) -> dict | None:
            meta = obj["metadata"]
            found = api.get(rtype.path(meta.get("namespace"), meta["name"]), what=f"read {item_name(rtype, obj)}")
            if found is not None:
                found.setdefault("apiVersion", rtype.api_version)
                found.setdefault("kind", rtype.kind)
            return found
        with ThreadPoolExecutor(self.options.parallelism, thread_name_prefix="kube-compare") as pool:
            for artifact in sorted((a for a in artifacts if a.kind == KIND), key=lambda a: a.identity):
                rtype = ResourceType.from_meta(artifact.meta)
                objects = list(self._objects(artifact, rtype, remap))
                if any(obj is None for _, obj in objects):
                    continue  # restore() failed it as unreadable: nothing was written
                held = list(pool.map(lambda pair: live(rtype, pair[1]), objects))
                found = sum(1 for h in held if h is not None)
                there = [[item, "missing" if h is None else normalized(rtype, h)] for (item, _), h in zip(objects, held)]
                backed = [[item, normalized(rtype, obj)] for item, obj in objects]
                yield (artifact.identity, _fingerprint(there, found, len(objects), key) if found else "",
                       _fingerprint(backed, len(objects), len(objects), key))

    # -- CRDs ---------------------------------------------------------------------------------------
    def _wait_for_crds(self, api: Api, crds: list[dict]) -> None:
        """Wait until each CRD is Established and discovery serves its versions (bounded)."""
        deadline = time.monotonic() + self.options.crd_wait_seconds
        for crd in crds:
            problem = self._wait_one(api, crd, deadline)
            spec = crd["spec"]
            if problem:
                self.unserved[f"{spec['names']['plural']}.{spec['group']}"] = problem
                self.log(problem)
        self._served.clear()
        api.call(lambda: api.dynamic.resources.invalidate_cache(), what="discovery refresh")

    def _wait_one(self, api: Api, crd: dict, deadline: float) -> str | None:
        spec, name = crd["spec"], crd["metadata"]["name"]
        versions = [v["name"] for v in spec.get("versions") or [] if v.get("served", True)]
        delay = 0.05
        while True:
            live = api.get(f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}", what=f"read CRD {name}")
            established = any(c.get("type") == "Established" and c.get("status") == "True"
                              for c in ((live or {}).get("status") or {}).get("conditions") or [])
            if established and all(spec["names"]["plural"] in served_plurals(api, spec["group"], v) for v in versions):
                return None
            if time.monotonic() > deadline:
                state = "Established but not yet served" if established else "not Established"
                return f"CRD {name} {state} within {self.options.crd_wait_seconds:g} s"
            time.sleep(delay)
            delay = min(delay * 2, 1.0)


def _fingerprint(entries: list, found: int, total: int, key: bytes) -> str:
    """Keyed (HMAC-SHA256 under a key made for one comparison): a Secret batch's fingerprint,
    which a drill's record may keep, lets no one test a guess of a value."""
    digest = hmac.new(key, json.dumps(entries, sort_keys=True).encode(), hashlib.sha256).hexdigest()
    return f"{found}/{total} objects, hmac-sha256 {digest}"


def _why(reasons: list[str], shown: int = 3) -> str:
    if not reasons:
        return "no prerequisites"
    more = f"; and {len(reasons) - shown} more" if len(reasons) > shown else ""
    return "; ".join(reasons[:shown]) + more


def _type_infos(artifacts: list[Artifact]) -> dict[str, TypeInfo]:
    infos: dict[str, TypeInfo] = {}
    for artifact in artifacts:
        rtype = ResourceType.from_meta(artifact.meta)
        old = infos.get(rtype.qualified, TypeInfo(rtype))
        infos[rtype.qualified] = TypeInfo(rtype, old.custom or bool(artifact.meta.get("custom")),
                                          old.workload or bool(artifact.meta.get("workload")))
    return infos


def _not_restored(artifact: Artifact) -> Outcome:
    if artifact.kind == SCANNED_KIND:
        return Outcome(f"scanned/{artifact.identity}", OutcomeStatus.SKIPPED,
                       "listed for its dependencies only (workload_kinds left this kind out): "
                       "the snapshot holds no objects of it")
    if artifact.kind == volumedata.KIND:
        return Outcome(f"volumes/{artifact.identity}", OutcomeStatus.SKIPPED,
                       "where the claims' volume data lives, for the audit: the snapshot holds the claims' "
                       "objects, not their data")
    if artifact.kind == helm_releases.KIND:
        return Outcome(f"helm-release/{artifact.identity}", OutcomeStatus.SKIPPED,
                       f"a decoded view for reading and the audit; the release comes back with its Secret "
                       f"{artifact.meta.get('namespace')}/{artifact.meta.get('secret')}")
    return Outcome(artifact.identity, OutcomeStatus.SKIPPED, f"unknown artifact kind {artifact.kind!r}")
