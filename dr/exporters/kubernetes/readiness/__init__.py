"""Go-live readiness, checked at backup time on the objects the backup lists.

A platform can hold a perfect backup and still fail to recover, or to be maintained, for
reasons in its own objects: a PodDisruptionBudget that blocks every drain, a serving
Deployment whose replicas share a node, a spot job killed before it can save. The backup lists
every object these checks need, so it runs them (disruption.py, serving.py, spot.py) and
records each problem as a finding with `category: readiness` and a runbook (codes.py);
`dr audit --readiness` lists them, `dr status` shows them with the source.

Objects arrive from several listing threads (observe); they are kept under a lock and judged
once every list finished (findings), like the reference checks (refchecks.py).
"""

from __future__ import annotations

import threading
from typing import Iterator

from dr.exporters.kubernetes.readiness.disruption import pdb_findings
from dr.exporters.kubernetes.readiness.serving import serving_findings
from dr.exporters.kubernetes.readiness.spot import Exposed, SpotCapacity, exposures, preemptible_jobs, spot_findings
from dr.exporters.kubernetes.readiness.workloads import workload_of
from dr.exporters.kubernetes.resources import ResourceType

KUEUE = "kueue.x-k8s.io"
PER_CODE = 200  # findings kept per code in the snapshot manifest; the rest are folded into one
_KEPT = {("policy", "poddisruptionbudgets"): "pdbs", (KUEUE, "resourceflavors"): "flavors",
         (KUEUE, "clusterqueues"): "cluster_queues", (KUEUE, "localqueues"): "local_queues"}


class ReadinessCheck:
    def __init__(self, options):
        self.options = options  # ReadinessOptions
        self._lock = threading.Lock()
        self._kept: dict[str, list[dict]] = {name: [] for name in _KEPT.values()}
        self._workloads: list = []
        self._exposed: Exposed | None = None  # the spot analysis, shared by findings() and facts()

    def observe(self, rtype: ResourceType, obj: dict) -> None:
        if not self.options.checks:
            return
        kept = _KEPT.get(rtype.key)
        # An owned workload (a LeaderWorkerSet's StatefulSets, an InferenceService's Deployment) is
        # judged through its owner: counting both would count its pods twice.
        owned = bool((obj.get("metadata") or {}).get("ownerReferences"))
        workload = None if kept or owned else workload_of(obj)
        with self._lock:
            if kept:
                self._kept[kept].append(obj)
            elif workload is not None:
                self._workloads.append(workload)

    def findings(self) -> Iterator[dict]:
        """Every finding, in a stable order (objects arrive in any order from the threads)."""
        checks = self.options.checks
        workloads = self._sorted()
        found: list[dict] = []
        if "pdb" in checks:
            found += pdb_findings(sorted(self._kept["pdbs"], key=_name), workloads)
        if "serving" in checks:
            found += serving_findings(workloads, self.options)
        if "spot" in checks:
            found += spot_findings(self._spot(), self.options.spot_notice_seconds)
        yield from _folded(sorted(found, key=lambda f: (f["code"], f["object"], f["message"])))

    def facts(self) -> Iterator[dict]:
        """Not a problem: every spot-capable workload with its notice and grace, in one record
        (`category: readiness-fact`) that `dr audit --readiness` joins with the measured saves of
        the training runs (spot-save-exceeds-notice); the audit never lists it as a finding."""
        if "spot" not in self.options.checks:
            return
        jobs = preemptible_jobs(self._spot(), self.options.spot_notice_seconds)
        if jobs:
            yield {"severity": "info", "code": "spot-preemptible-jobs", "category": "readiness-fact",
                   "message": f"{len(jobs)} workload(s) can run on spot capacity: "
                              + ", ".join(j["object"] for j in jobs[:20]) + (" ..." if len(jobs) > 20 else ""),
                   "preemptible_jobs": jobs}

    def _sorted(self) -> list:
        """The workloads in a stable order (they arrive in any order from the threads)."""
        return sorted(self._workloads, key=lambda w: w.ref)

    def _spot(self) -> Exposed:
        """Each workload that can land on spot capacity, worked out once: findings() and facts()
        both need it, and at 10,000 workloads it was most of the checks' time."""
        if self._exposed is None:
            capacity = SpotCapacity(self._kept["flavors"], self._kept["cluster_queues"], self._kept["local_queues"])
            self._exposed = list(exposures(self._sorted(), capacity))
        return self._exposed


def _folded(found: list[dict]) -> Iterator[dict]:
    """At most PER_CODE findings per code, so a large cluster keeps its manifest small; past it
    one more finding of that code counts the rest and names the first 20, so none is dropped
    silently."""
    by_code: dict[str, list[dict]] = {}
    for finding in found:
        by_code.setdefault(finding["code"], []).append(finding)
    for code, findings in by_code.items():
        yield from findings[:PER_CODE]
        rest = findings[PER_CODE:]
        if rest:
            objects = [f["object"] for f in rest]
            yield {**rest[0], "object": f"{len(rest)} more objects",
                   "message": f"{len(rest)} more {code} finding(s) like the ones above, on: {', '.join(objects[:20])}"
                              + (" ..." if len(objects) > 20 else ""), "more": len(rest)}


def _name(obj: dict) -> tuple[str, str]:
    meta = obj.get("metadata") or {}
    return meta.get("namespace") or "", meta.get("name") or ""
