"""Which claims a `volumes` source copies, and why each of the others is left out.

Every claim of the listed namespaces is named in the output: selected, or skipped with the
option that left it out (namespace, selector, storage class, workload), or skipped because it
holds nothing to copy yet (not Bound) or is not a filesystem (volumeMode Block: the mover reads
files). A generic ephemeral volume's claim (owned by its Pod) is scratch space, and skipped so.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field
from urllib.parse import quote

from dr.exporters.volumes.cluster import Cluster
from dr.exporters.volumes.options import VolumesOptions


@dataclass
class Claim:
    namespace: str
    name: str
    obj: dict
    storage_class: str = ""
    provisioner: str = ""
    workloads: list[str] = field(default_factory=list)  # "StatefulSet/qdrant"
    node: str | None = None  # where a pod mounting it runs (a live read of a ReadWriteOnce volume)
    skipped: str = ""  # why it is not copied; empty: selected

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def uid(self) -> str:
        return self.obj["metadata"].get("uid", "")


def claims(cluster: Cluster, options: VolumesOptions) -> list[Claim]:
    """Every claim of the namespaces the options name, each selected or skipped with a reason."""
    paths = [f"/api/v1/namespaces/{quote(ns)}/persistentvolumeclaims" for ns in options.namespaces] \
        or ["/api/v1/persistentvolumeclaims"]
    selected_names = _names(cluster, paths, options.selector) if options.selector else None
    classes = {c["metadata"]["name"]: c for c in cluster.items("/apis/storage.k8s.io/v1/storageclasses")}
    pods = _pods(cluster, options.namespaces)
    found = []
    for path in paths:
        for obj in cluster.items(path):
            claim = _claim(obj, classes, pods)
            claim.skipped = _skip_reason(claim, options, selected_names)
            found.append(claim)
    return sorted(found, key=lambda c: c.key)


def _names(cluster: Cluster, paths: list[str], selector: str) -> set[str]:
    """The claims the API server selects with the label selector (its own parser: one truth)."""
    return {f"{o['metadata']['namespace']}/{o['metadata']['name']}"
            for path in paths for o in cluster.items(path, labelSelector=selector)}


def _pods(cluster: Cluster, namespaces: list[str]) -> list[dict]:
    paths = [f"/api/v1/namespaces/{quote(ns)}/pods" for ns in namespaces] or ["/api/v1/pods"]
    return [pod for path in paths for pod in cluster.items(path)]


def _claim(obj: dict, classes: dict[str, dict], pods: list[dict]) -> Claim:
    meta, spec = obj["metadata"], obj.get("spec") or {}
    storage_class = spec.get("storageClassName") or ""
    claim = Claim(meta["namespace"], meta["name"], obj, storage_class,
                  (classes.get(storage_class) or {}).get("provisioner", ""))
    for pod in pods:
        if pod["metadata"].get("namespace") != claim.namespace or \
                (pod["metadata"].get("labels") or {}).get("dr.io/temporary"):
            continue  # another namespace's, or dr's own mover
        volumes = (pod.get("spec") or {}).get("volumes") or []
        if any((v.get("persistentVolumeClaim") or {}).get("claimName") == claim.name for v in volumes):
            claim.workloads += _owners(pod)
            claim.node = claim.node or (pod.get("spec") or {}).get("nodeName")
    return claim


def _owners(pod: dict) -> list[str]:
    """`Kind/name` of the pod and of what owns it; a ReplicaSet's Deployment by the name's hash."""
    meta = pod["metadata"]
    found = [f"Pod/{meta['name']}"]
    for owner in meta.get("ownerReferences") or []:
        found.append(f"{owner['kind']}/{owner['name']}")
        if owner["kind"] == "ReplicaSet" and "-" in owner["name"]:
            found.append(f"Deployment/{owner['name'].rsplit('-', 1)[0]}")
    return found


def _skip_reason(claim: Claim, options: VolumesOptions, selected_names: set[str] | None) -> str:
    meta, spec = claim.obj["metadata"], claim.obj.get("spec") or {}
    if any(o.get("kind") == "Pod" for o in meta.get("ownerReferences") or []):
        return "a generic ephemeral volume (its Pod's scratch space)"
    if selected_names is not None and claim.key not in selected_names:
        return f"not selected by selector {options.selector!r}"
    if options.storage_classes and not any(fnmatch.fnmatchcase(claim.storage_class, p)
                                           for p in options.storage_classes):
        return f"storage class {claim.storage_class or '(none)'} is not in storage_classes"
    if options.workloads and not _theirs(claim, options.workloads):
        return "no workload of the workloads option mounts it"
    if spec.get("volumeMode") == "Block":
        return "a raw block volume (volumeMode Block): the mover copies filesystems"
    if (claim.obj.get("status") or {}).get("phase") != "Bound":
        return f"not Bound ({(claim.obj.get('status') or {}).get('phase', 'Pending')}): it holds no data yet"
    return ""


def _theirs(claim: Claim, workloads: list[str]) -> bool:
    if any(w in claim.workloads for w in workloads):
        return True
    # a StatefulSet's claim <template>-<statefulset>-<ordinal>, mounted or not (scaled to zero)
    for workload in workloads:
        kind, _, name = workload.partition("/")
        stem, _, ordinal = claim.name.rpartition("-")
        if kind == "StatefulSet" and ordinal.isdigit() and stem.endswith(f"-{name}"):
            return True
    return False
