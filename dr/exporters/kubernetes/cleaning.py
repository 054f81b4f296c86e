"""What is not configuration: fields stripped at backup, and fields the destination assigns.

Two tables, each entry with its reason. RUNTIME fields are removed from every object before
it is stored (a restored object gets new ones from the destination's API server). ASSIGNED
fields are kept in the backup (they are useful to read) but removed before an object is
created in the destination and ignored when an existing object is compared with the backup:
the destination's own controllers and allocators own them there.

normalized() is the one comparison form: an object from the backup and the live object it is
compared with both go through it, so "unchanged" means equal in everything a user configured.
"""

from __future__ import annotations

import copy
from typing import Any, Callable

from dr.exporters.kubernetes.resources import ResourceType

RUNTIME_METADATA = {
    "uid": "assigned by the API server; the restored object gets a new one",
    "resourceVersion": "etcd's revision of the object; a create must not carry one",
    "managedFields": "server-side apply bookkeeping of the source's field managers",
    "creationTimestamp": "set by the API server at create",
    "generation": "counted by the API server on each spec change",
    "selfLink": "deprecated, derived from the path",
    "deletionTimestamp": "a deletion in progress in the source is not configuration",
    "deletionGracePeriodSeconds": "belongs to a deletion in progress",
}
RUNTIME_ANNOTATIONS = {
    "kubectl.kubernetes.io/last-applied-configuration":
        "kubectl's copy of the whole object: doubles the size, and stale after any other writer",
}
_RUNTIME_KEYS = frozenset(RUNTIME_METADATA)
_RUNTIME_ANNOTATION_KEYS = frozenset(RUNTIME_ANNOTATIONS)

# (group, plural, path, reason): removed before create, ignored when comparing.
ASSIGNED: list[tuple[str, str, tuple[str, ...], str]] = [
    ("", "services", ("spec", "clusterIP"), "allocated from the destination's service CIDR"),
    ("", "services", ("spec", "clusterIPs"), "allocated from the destination's service CIDR"),
    ("", "persistentvolumeclaims", ("spec", "volumeName"), "names a volume of the source cluster"),
    ("", "persistentvolumeclaims", ("metadata", "annotations", "pv.kubernetes.io/bind-completed"),
     "binding state of the source's volume"),
    ("", "persistentvolumeclaims", ("metadata", "annotations", "pv.kubernetes.io/bound-by-controller"),
     "binding state of the source's volume"),
    ("", "persistentvolumeclaims", ("metadata", "annotations", "volume.kubernetes.io/selected-node"),
     "a node of the source cluster"),
    ("", "pods", ("spec", "nodeName"), "a node of the source cluster"),
    ("apps", "deployments", ("metadata", "annotations", "deployment.kubernetes.io/revision"),
     "counted by the destination's deployment controller"),
    ("batch", "jobs", ("spec", "template", "metadata", "labels", "controller-uid"),
     "derived from the source Job's uid; the destination generates its own"),
    ("batch", "jobs", ("spec", "template", "metadata", "labels", "batch.kubernetes.io/controller-uid"),
     "derived from the source Job's uid; the destination generates its own"),
]


def _pop_path(obj: Any, path: tuple[str, ...]) -> None:
    for key in path[:-1]:
        obj = obj.get(key) if isinstance(obj, dict) else None
        if obj is None:
            return
    if isinstance(obj, dict):
        obj.pop(path[-1], None)


def _drop_empty(meta: dict, *keys: str) -> None:
    for key in keys:
        if key in meta and not meta[key]:
            del meta[key]


def strip_runtime(obj: dict, *, include_status: bool = False,
                  keep_owner: Callable[[dict], bool] = lambda ref: True) -> dict:
    """Remove RUNTIME fields (in place) and ownerReferences whose owner is not in the backup."""
    meta = obj.setdefault("metadata", {})
    for key in _RUNTIME_KEYS & meta.keys():
        del meta[key]
    annotations = meta.get("annotations")
    if annotations:
        for key in _RUNTIME_ANNOTATION_KEYS & annotations.keys():
            del annotations[key]
    if "ownerReferences" in meta:
        meta["ownerReferences"] = [ref for ref in meta["ownerReferences"] if keep_owner(ref)]
    _drop_empty(meta, "annotations", "ownerReferences")
    if not include_status:
        obj.pop("status", None)
    return obj


def strip_assigned(rtype: ResourceType, obj: dict) -> dict:
    """Remove ASSIGNED fields (in place): what the destination must choose for itself."""
    for group, plural, path, _ in ASSIGNED:
        if rtype.key == (group, plural):
            _pop_path(obj, path)
    if rtype.key == ("batch", "jobs") and not (obj.get("spec") or {}).get("manualSelector"):
        _pop_path(obj, ("spec", "selector"))  # generated from the Job's uid, like its labels
    return obj


# Types with ASSIGNED fields (or a Job's generated selector) lose nested fields before create.
_ASSIGNED_TYPES = frozenset((group, plural) for group, plural, _, _ in ASSIGNED) | {("batch", "jobs")}


def for_create(rtype: ResourceType, obj: dict) -> dict:
    """The body sent to the destination: no runtime fields, no assigned fields, no status.
    `obj` is left as it was."""
    body = strip_assigned(rtype, strip_runtime(_copy_to_strip(rtype, obj)))
    if _headless(obj):
        body["spec"]["clusterIP"] = "None"  # headless is configuration, not an allocation
    return body


def _copy_to_strip(rtype: ResourceType, obj: dict) -> dict:
    """A copy of `obj` that stripping may change: the dicts strip_runtime changes (the object,
    its metadata and annotations; ownerReferences it replaces), or, for a type with assigned
    fields, all of it. A restore creates every object once; a deep copy of each cost about as
    much CPU as the client's own serialization of it."""
    if rtype.key in _ASSIGNED_TYPES:
        return copy.deepcopy(obj)
    meta = dict(obj.get("metadata") or {})
    if isinstance(meta.get("annotations"), dict):
        meta["annotations"] = dict(meta["annotations"])
    return {**obj, "metadata": meta}


def _headless(obj: dict) -> bool:
    return (obj.get("kind") == "Service" and (obj.get("spec") or {}).get("clusterIP") == "None")


def normalized(rtype: ResourceType, obj: dict) -> dict:
    """The comparison form (see the module docstring); ownerReference uids differ by cluster."""
    body = for_create(rtype, obj)
    meta = body.get("metadata") or {}
    if meta.get("ownerReferences"):  # new dicts: the references are shared with `obj`
        meta["ownerReferences"] = [{k: v for k, v in ref.items() if k != "uid"} for ref in meta["ownerReferences"]]
    _drop_empty(meta, "labels", "annotations", "finalizers")
    return body


def differences(left: Any, right: Any, path: str = "", limit: int = 5) -> list[str]:
    """Up to `limit` dotted paths where two JSON values differ (for CONFLICT reasons)."""
    if isinstance(left, dict) and isinstance(right, dict):
        found: list[str] = []
        for key in sorted(set(left) | set(right)):
            if len(found) >= limit:
                break
            if left.get(key, _MISSING) != right.get(key, _MISSING):
                found += differences(left.get(key, _MISSING), right.get(key, _MISSING),
                                     f"{path}.{key}" if path else str(key), limit - len(found))
        return found
    if isinstance(left, list) and isinstance(right, list) and len(left) == len(right):
        found = []
        for index, (a, b) in enumerate(zip(left, right)):
            if a != b and len(found) < limit:
                found += differences(a, b, f"{path}[{index}]", limit - len(found))
        return found
    return [path or "(whole object)"]


_MISSING = object()
