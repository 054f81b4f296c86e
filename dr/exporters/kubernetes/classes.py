"""Class references, checked at backup time: an object naming a cluster-scoped class the backup lacks.

Kubernetes admission, or the controller that owns the class, refuses or ignores an object whose
class does not exist; the class is cluster-wide, so a recovery cluster has it only when the
restore brings it or someone created it. The scan records each class reference as a dependency
(scanning.py: a pod template's priorityClassName and runtimeClassName, storageClassName anywhere,
an Ingress's spec.ingressClassName or kubernetes.io/ingress.class annotation); this check turns
those the backup does not hold into one `class-missing` finding each (refchecks.py), with what
goes wrong and the fixes:

  dependency kind  class          without it
  priority-class   PriorityClass  admission rejects the pods (system-cluster-critical and
                                  system-node-critical are built in: never recorded)
  runtime-class    RuntimeClass   admission rejects the pods
  storage-class    StorageClass   the claim stays Pending, and so do the pods mounting it
                                  (a `storage-class:<old>` remap points the claims elsewhere)
  ingress-class    IngressClass   no ingress controller serves the Ingress

CLASSES is the one declaration of these kinds: the scan reads the pod spec fields and built-in
names from it, and the exporter declares its keys as the contract's `checked_kinds`, so the
audit (dr.audit.dependency_findings) does not call such a reference "unknown location": the class is an
object the recovery cluster must have, not a place, and this finding says so.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Iterator

from dr.exporters.kubernetes.refchecks import ReferenceCheck, Wanted
from dr.model.artifacts import Dependency

CODE = "class-missing"


@dataclass(frozen=True)
class ClassKind:
    """A cluster-scoped class type, the consequence of naming a missing one, and its remap kind."""

    kind: str
    key: tuple[str, str]  # (group, plural) of the class objects
    consequence: str
    remap: str = ""  # the restore remap kind that points referrers at another class
    pod_field: str = ""  # the pod spec field that names one (scanning.py reads it there)
    built_in: frozenset[str] = frozenset()  # names every API server creates: never recorded

    def reference(self, name: str) -> str:
        """The dependency's reference, as the backup's class objects provide it: `priorityclass:<name>`."""
        return f"{self.kind.lower()}:{name}"


_REJECTED = "admission rejects its pods ({why}): the workload never runs, in the source and after a restore"
CLASSES: dict[str, ClassKind] = {
    "priority-class": ClassKind("PriorityClass", ("scheduling.k8s.io", "priorityclasses"),
                                _REJECTED.format(why="no PriorityClass with that name"),
                                pod_field="priorityClassName",
                                built_in=frozenset({"system-cluster-critical", "system-node-critical"})),
    "runtime-class": ClassKind("RuntimeClass", ("node.k8s.io", "runtimeclasses"),
                               _REJECTED.format(why="RuntimeClass not found"), pod_field="runtimeClassName"),
    "storage-class": ClassKind("StorageClass", ("storage.k8s.io", "storageclasses"),
                               "no provisioner binds the claim: it stays Pending, and so does every pod that "
                               "mounts it", remap="storage-class"),
    "ingress-class": ClassKind("IngressClass", ("networking.k8s.io", "ingressclasses"),
                               "no ingress controller serves the Ingress: its hosts answer nothing"),
}


def class_check() -> ReferenceCheck:
    """The class objects the backup holds; what names them is fed in by wanted_classes()."""
    return ReferenceCheck({c.key: c.kind for c in CLASSES.values()}, {})


def wanted_classes(dependencies: Iterable[Dependency]) -> Iterator[Wanted]:
    """The class references among one object's scanned dependencies (detail: `Kind/ns/name .path`)."""
    for dep in dependencies:
        known = CLASSES.get(dep.kind)
        if known is None:
            continue
        referrer, _, field = dep.detail.partition(" ")
        name = dep.reference.partition(":")[2]
        yield Wanted(referrer, known.kind, name, CODE, known.consequence, at=field, fix=_fix(known, name))


def _fix(known: ClassKind, name: str) -> str:
    remap = (f"; or remap it when restoring ({known.remap}:{name} -> a {known.kind} the recovery cluster has)"
             if known.remap else "")
    return (f"create {known.kind} {name!r} at the source (or export it with this source) and back up again, "
            f"or create it in the recovery cluster before restoring{remap}")
