"""Kueue, checked at backup time: a ClusterQueue whose ResourceFlavor or AdmissionCheck is missing.

Kueue keeps such a ClusterQueue inactive (FlavorNotFound / AdmissionCheckNotFound): nothing
it covers is admitted. That is true in the source already, and a restore would bring the same
broken queue back, so the backup reports it as a finding while the source can still be fixed.
A LocalQueue pointing at a missing ClusterQueue is reported the same way.

Objects are observed from several listing threads; the names are kept under a lock and
compared once every list finished.
"""

from __future__ import annotations

import threading
from typing import Iterator

from dr.exporters.kubernetes.resources import ResourceType

GROUP = "kueue.x-k8s.io"


def flavor_refs(cq: dict) -> Iterator[str]:
    for group in (cq.get("spec") or {}).get("resourceGroups") or []:
        for flavor in (group or {}).get("flavors") or []:
            if isinstance(flavor, dict) and flavor.get("name"):
                yield flavor["name"]


def check_refs(cq: dict) -> Iterator[str]:
    spec = cq.get("spec") or {}
    for name in spec.get("admissionChecks") or []:
        if isinstance(name, str):
            yield name
    for rule in (spec.get("admissionChecksStrategy") or {}).get("admissionChecks") or []:
        if isinstance(rule, dict) and rule.get("name"):
            yield rule["name"]


class KueueCheck:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._present: dict[str, set[str]] = {"resourceflavors": set(), "admissionchecks": set(),
                                              "clusterqueues": set()}
        self._wanted: list[tuple[str, str, str, str]] = []  # (referrer kind, referrer, plural, name)

    def observe(self, rtype: ResourceType, obj: dict) -> None:
        if rtype.group != GROUP:
            return
        plural = rtype.plural
        name = obj["metadata"].get("name", "")
        with self._lock:
            if plural in self._present:
                self._present[plural].add(name)
            if plural == "clusterqueues":
                self._wanted += [("ClusterQueue", name, "resourceflavors", f) for f in flavor_refs(obj)]
                self._wanted += [("ClusterQueue", name, "admissionchecks", c) for c in check_refs(obj)]
            elif plural == "localqueues" and (obj.get("spec") or {}).get("clusterQueue"):
                referrer = f"{obj['metadata'].get('namespace', '')}/{name}"
                self._wanted.append(("LocalQueue", referrer, "clusterqueues", obj["spec"]["clusterQueue"]))

    def findings(self) -> Iterator[dict]:
        """One finding per missing reference, in a stable order."""
        labels = {"resourceflavors": ("ResourceFlavor", "kueue-flavor-missing", "FlavorNotFound"),
                  "admissionchecks": ("AdmissionCheck", "kueue-admission-check-missing",
                                      "AdmissionCheckNotFound"),
                  "clusterqueues": ("ClusterQueue", "kueue-cluster-queue-missing", "ClusterQueueDoesNotExist")}
        for referrer_kind, referrer, plural, name in sorted(set(self._wanted)):
            if name in self._present[plural]:
                continue
            kind, code, reason = labels[plural]
            yield {"severity": "warning", "code": code,
                   "message": (f"{referrer_kind} {referrer} names {kind} {name!r}, which does not exist: "
                               f"Kueue keeps it inactive ({reason}), in the source and after a restore"),
                   "referrer": f"{referrer_kind}/{referrer}", "missing": f"{kind}/{name}",
                   "object": f"{referrer_kind}/{referrer}",
                   "action": f"create {kind} {name!r} at the source (or correct {referrer_kind} {referrer}), "
                             "then back up again"}
