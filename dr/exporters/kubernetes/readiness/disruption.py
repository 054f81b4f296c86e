"""PodDisruptionBudgets that stop maintenance or promise availability they cannot keep.

Why each matters for recovery (the Kubernetes docs, "Disruptions" and "Specifying a Disruption
Budget for your Application"): node drains go through the eviction API, which refuses an
eviction that would break a budget. A cluster whose drains never finish cannot be patched,
resized or failed over node by node, and the same PDB comes back with a restore.
  pdb-blocks-drain       minAvailable equal to the pods (1 with a single replica), maxUnavailable
                         0: no eviction is ever allowed. For a LeaderWorkerSet a pod's eviction
                         restarts its whole group, so the budget is judged in groups: fewer
                         allowed disruptions than a group's pods is a budget no drain can keep
  pdb-selects-nothing    its selector matches no pod template of the listed workloads: it
                         protects nothing (often a label renamed in the workload)
  pdb-overlap            two budgets select the same pods: the eviction API answers 500 for
                         such a pod ("more than one PodDisruptionBudget"), and drains stop there
  pdb-unhealthy-policy-missing
                         without unhealthyPodEvictionPolicy the default IfHealthyBudget refuses to
                         evict a running but not-ready pod while the budget is not met: a
                         crash-looping workload blocks the drain of every node it runs on
  pdb-no-spread          several replicas with no anti-affinity nor topology spread on
                         kubernetes.io/hostname may all sit on one node: losing that node takes
                         them all, whatever the budget says
The pods a budget counts are those of the listed workloads whose pod template it selects, in its
namespace; a selector `{}` selects every pod of the namespace.
"""

from __future__ import annotations

import math
from typing import Iterator

from dr.exporters.kubernetes.readiness.codes import finding
from dr.exporters.kubernetes.readiness.workloads import HOSTNAME, Workload, selects, spreads
from dr.exporters.kubernetes.refchecks import referrer, spec


def pdb_findings(pdbs: list[dict], workloads: list[Workload]) -> Iterator[dict]:
    covering: dict[str, list[str]] = {}
    for pdb in pdbs:
        who = referrer("PodDisruptionBudget", pdb)
        covered = _covered(pdb, workloads)
        for workload in covered:
            covering.setdefault(workload.ref, []).append(who)
        if not covered:
            yield finding("pdb-selects-nothing", who,
                          f"{who}'s selector matches no pod template of the workloads in the backup: it protects "
                          "nothing (if its pods belong to a kind this source does not list, export that kind)")
            continue
        yield from _budget(pdb, who, covered)
        yield from _unhealthy(pdb, who)
        yield from _spread(who, covered)
    for ref, pdb_refs in sorted(covering.items()):
        if len(pdb_refs) > 1:
            yield finding("pdb-overlap", ref,
                          f"the pods of {ref} are selected by {len(pdb_refs)} PodDisruptionBudgets "
                          f"({', '.join(sorted(pdb_refs))}): the eviction API refuses to evict a pod with more "
                          "than one budget, so every drain of their nodes stops", pdbs=sorted(pdb_refs))


def _covered(pdb: dict, workloads: list[Workload]) -> list[Workload]:
    namespace = (pdb.get("metadata") or {}).get("namespace") or ""
    selector = spec(pdb).get("selector")
    return [w for w in workloads if w.namespace == namespace and any(selects(selector, t.labels) for t in w.templates)]


def _allowed(budget: dict, pods: int) -> int | None:
    """Pods the budget lets go at once (percentages round up, as the disruption controller does)."""
    if "minAvailable" in budget:
        return pods - _amount(budget["minAvailable"], pods)
    if "maxUnavailable" in budget:
        return min(_amount(budget["maxUnavailable"], pods), pods)
    return None


def _amount(value, pods: int) -> int:
    if isinstance(value, str) and value.endswith("%"):
        return math.ceil(float(value[:-1] or 0) * pods / 100)
    return int(value)


def _budget(pdb: dict, who: str, covered: list[Workload]) -> Iterator[dict]:
    if any(w.pods is None for w in covered):
        return  # a kind whose pods are not counted: the budget cannot be judged
    pods = sum(w.pods for w in covered)
    try:
        allowed = _allowed(spec(pdb), pods)
    except (TypeError, ValueError):
        return  # a value the API server would refuse
    if allowed is None:
        return
    names = ", ".join(w.ref for w in covered)
    group = max(w.group_size for w in covered)
    if allowed <= 0:
        yield finding("pdb-blocks-drain", who,
                      f"{who} allows no disruption of the {pods} pod(s) of {names}: every node drain that "
                      "reaches one of them waits forever", allowed=allowed, pods=pods)
    elif group > 1 and allowed < group:
        yield finding("pdb-blocks-drain", who,
                      f"{who} allows {allowed} of the {pods} pod(s) of {names} to go, fewer than one replica "
                      f"group ({group} pods): evicting one pod restarts its whole group, so the budget is "
                      "broken by the first eviction, or no group can ever be drained", allowed=allowed,
                      pods=pods, group_size=group)


def _unhealthy(pdb: dict, who: str) -> Iterator[dict]:
    if not spec(pdb).get("unhealthyPodEvictionPolicy"):
        yield finding("pdb-unhealthy-policy-missing", who,
                      f"{who} sets no unhealthyPodEvictionPolicy: the default, IfHealthyBudget, refuses to evict "
                      "pods that run but are not ready while the budget is not met, so a crash-looping workload "
                      "blocks the drain of every node it runs on")


def _spread(who: str, covered: list[Workload]) -> Iterator[dict]:
    for workload in covered:
        if (workload.replicas or 0) > 1 and not any(spreads(t, HOSTNAME, required=False) for t in workload.templates):
            yield finding("pdb-no-spread", who,
                          f"{who} protects {workload.ref}, whose {workload.replicas} replicas have no pod "
                          f"anti-affinity nor topology spread on {HOSTNAME}: they may all run on one node, and "
                          "losing it takes them all, whatever the budget says", workload=workload.ref)
