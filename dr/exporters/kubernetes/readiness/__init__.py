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
from dr.exporters.kubernetes.readiness.spot import SpotCapacity, spot_findings
from dr.exporters.kubernetes.readiness.workloads import workload_of
from dr.exporters.kubernetes.resources import ResourceType

KUEUE = "kueue.x-k8s.io"
_KEPT = {("policy", "poddisruptionbudgets"): "pdbs", (KUEUE, "resourceflavors"): "flavors",
         (KUEUE, "clusterqueues"): "cluster_queues", (KUEUE, "localqueues"): "local_queues"}


class ReadinessCheck:
    def __init__(self, options):
        self.options = options  # ReadinessOptions
        self._lock = threading.Lock()
        self._kept: dict[str, list[dict]] = {name: [] for name in _KEPT.values()}
        self._workloads: list = []

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
        workloads = sorted(self._workloads, key=lambda w: w.ref)
        found: list[dict] = []
        if "pdb" in checks:
            found += pdb_findings(sorted(self._kept["pdbs"], key=_name), workloads)
        if "serving" in checks:
            found += serving_findings(workloads, self.options)
        if "spot" in checks:
            capacity = SpotCapacity(self._kept["flavors"], self._kept["cluster_queues"], self._kept["local_queues"])
            found += spot_findings(workloads, capacity, self.options.spot_notice_seconds)
        yield from sorted(found, key=lambda f: (f["code"], f["object"], f["message"]))


def _name(obj: dict) -> tuple[str, str]:
    meta = obj.get("metadata") or {}
    return meta.get("namespace") or "", meta.get("name") or ""
