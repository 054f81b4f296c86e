"""The readiness finding codes: the check each belongs to, its severity and what to do.

Every code has a runbook at runbooks/<code>.md (tests/kubernetes/test_readiness.py checks it).
A finding is recorded with the facts `category: readiness` (what `dr audit --readiness` lists),
`check`, `object`, `action` and `runbook`, beside the contract's severity, code and message.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ReadinessCode:
    check: str
    severity: str
    action: str


CODES: dict[str, ReadinessCode] = {
    "pdb-blocks-drain": ReadinessCode(
        "pdb", "warning", "lower minAvailable (or raise maxUnavailable) so that at least one pod, or one "
        "LeaderWorkerSet group, may be evicted, or add replicas"),
    "pdb-selects-nothing": ReadinessCode(
        "pdb", "warning", "correct the PodDisruptionBudget's selector to the labels of the pod template it "
        "should protect, or delete it"),
    "pdb-overlap": ReadinessCode(
        "pdb", "warning", "keep one PodDisruptionBudget per set of pods: narrow the selectors so no pod is "
        "selected by two"),
    "pdb-unhealthy-policy-missing": ReadinessCode(
        "pdb", "warning", "set spec.unhealthyPodEvictionPolicy: AlwaysAllow, so pods that are not ready can "
        "always be evicted"),
    "pdb-no-spread": ReadinessCode(
        "pdb", "warning", "spread the pods across nodes: pod anti-affinity or a topologySpreadConstraint on "
        "kubernetes.io/hostname"),
    "serving-replicas-not-independent": ReadinessCode(
        "serving", "warning", "run at least two replicas with required pod anti-affinity or a DoNotSchedule "
        "topologySpreadConstraint on kubernetes.io/hostname (and topology.kubernetes.io/zone where the "
        "plan has zones)"),
    "serving-startup-probe-short": ReadinessCode(
        "serving", "warning", "add a startupProbe whose initialDelaySeconds + failureThreshold x "
        "periodSeconds covers the model's load time"),
    "serving-readiness-tcp-only": ReadinessCode(
        "serving", "warning", "give the serving container a readinessProbe that asks the model server "
        "(httpGet on its health endpoint, grpc or exec), not only whether the port is open"),
    "serving-no-drain": ReadinessCode(
        "serving", "warning", "add a preStop hook that stops taking new requests and waits for open "
        "streams, and set terminationGracePeriodSeconds longer than the longest stream"),
    "spot-grace-too-short": ReadinessCode(
        "spot", "warning", "raise terminationGracePeriodSeconds to the provider's notice window, so a "
        "preempted job gets the whole notice to save its state"),
    "spot-no-shutdown-handling": ReadinessCode(
        "spot", "warning", "add a preStop hook that saves a checkpoint, or handle SIGTERM in the job and "
        "declare it with the annotation dr.io/handles-sigterm: \"true\""),
}


def runbook(code: str) -> str:
    return f"runbooks/{code}.md"


def finding(code: str, obj: str, message: str, **facts) -> dict:
    """The ExportContext.finding arguments for one readiness finding."""
    known = CODES[code]
    return {"severity": known.severity, "code": code, "message": message, "object": obj,
            "category": "readiness", "check": known.check, "action": known.action,
            "runbook": runbook(code), **facts}
