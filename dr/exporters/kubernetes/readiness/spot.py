"""Spot and preemptible capacity: a job that can be preempted must get the notice to save its state.

A workload can land on spot capacity when
  - it is queued through Kueue (label kueue.x-k8s.io/queue-name, on the object or its pod
    template) to a LocalQueue whose ClusterQueue lists a ResourceFlavor with a spot node label
    or taint (Kueue adds the flavor's nodeLabels as node selectors and its tolerations), or
  - its pod template selects or tolerates spot nodes itself (nodeSelector, required node
    affinity, tolerations).
Spot labels and taints, and the provider each names:
  cloud.google.com/gke-spot, cloud.google.com/gke-preemptible            gke   (notice 30 s)
  eks.amazonaws.com/capacityType: SPOT, karpenter.sh/capacity-type: spot  aws   (notice 120 s)
  kubernetes.azure.com/scalesetpriority: spot                             azure (notice 30 s)
  any other key or value that is "spot" or "preemptible" (Kueue's own example flavor has
  `instance-type: spot` and a `spot` taint)                               other
The notice windows are the plan's (`readiness.spot_notice_seconds`).

  spot-grace-too-short       terminationGracePeriodSeconds (default 30) shorter than the notice:
                             the kubelet kills the job before the notice runs out, with its save
                             unfinished
  spot-no-shutdown-handling  no preStop hook and no declared SIGTERM handling (annotation
                             dr.io/handles-sigterm: "true"): nothing saves the state when the
                             notice comes, and the work since the last checkpoint is lost
Whether the measured save duration fits the notice is judged by `dr audit --readiness`
(spot-save-exceeds-notice), which joins the checkpoints' measured saves with the fact
preemptible_jobs() records here for every spot-capable job: this exporter does not see saves.
"""

from __future__ import annotations

from typing import Iterator

from dr.exporters.kubernetes.readiness.codes import finding
from dr.exporters.kubernetes.readiness.workloads import Template, Workload, containers
from dr.exporters.kubernetes.refchecks import spec, text

QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
SIGTERM_KEY = "dr.io/handles-sigterm"
DEFAULT_GRACE = 30
_PROVIDER_KEYS = {"cloud.google.com/gke-spot": "gke", "cloud.google.com/gke-preemptible": "gke",
                  "eks.amazonaws.com/capacitytype": "aws", "karpenter.sh/capacity-type": "aws",
                  "kubernetes.azure.com/scalesetpriority": "azure"}
_SPOT_WORDS = {"spot", "preemptible"}


def provider(key: str, value: str | None) -> str | None:
    """The spot provider a node label or taint (key, value) names, or None for on-demand."""
    known = _PROVIDER_KEYS.get(key.lower())
    if known:
        return known if (value or "true").lower() in ("true", "spot", "") else None
    words = {key.lower(), key.lower().rsplit("/", 1)[-1], (value or "").lower()}
    return "other" if words & _SPOT_WORDS else None


def flavor_providers(flavor: dict) -> set[str]:
    body = spec(flavor)
    pairs = list((body.get("nodeLabels") or {}).items())
    pairs += [(t.get("key", ""), t.get("value")) for t in body.get("nodeTaints") or [] if isinstance(t, dict)]
    pairs += [(t.get("key", ""), t.get("value")) for t in body.get("tolerations") or [] if isinstance(t, dict)]
    return {p for key, value in pairs if isinstance(key, str) and (p := provider(key, _str(value)))}


def template_providers(template: Template) -> set[str]:
    pod = template.spec
    pairs = list((pod.get("nodeSelector") or {}).items())
    required = ((pod.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution") or {}
    for term in required.get("nodeSelectorTerms") or []:
        for expression in (term or {}).get("matchExpressions") or []:
            if isinstance(expression, dict) and expression.get("operator") == "In":
                pairs += [(expression.get("key", ""), str(v)) for v in expression.get("values") or []]
    pairs += [(t.get("key", ""), t.get("value")) for t in pod.get("tolerations") or [] if isinstance(t, dict)]
    return {p for key, value in pairs if isinstance(key, str) and (p := provider(key, _str(value)))}


def _str(value) -> str | None:
    return None if value is None else str(value)


class SpotCapacity:
    """Kueue's queues and flavors, as listed: which LocalQueue leads to which spot providers."""

    def __init__(self, flavors: list[dict], cluster_queues: list[dict], local_queues: list[dict]):
        spot = {(f.get("metadata") or {}).get("name"): flavor_providers(f) for f in flavors}
        self.queues: dict[str, dict[str, set[str]]] = {}  # ClusterQueue -> spot flavor -> providers
        for cq in cluster_queues:
            names = [flavor.get("name") for group in spec(cq).get("resourceGroups") or []
                     for flavor in (group or {}).get("flavors") or [] if isinstance(flavor, dict)]
            self.queues[(cq.get("metadata") or {}).get("name")] = {n: spot[n] for n in names if spot.get(n)}
        self.local = {f"{(lq.get('metadata') or {}).get('namespace')}/{(lq.get('metadata') or {}).get('name')}":
                      text(spec(lq).get("clusterQueue")) for lq in local_queues}

    def through_queue(self, workload: Workload) -> dict[str, set[str]]:
        """ResourceFlavor -> providers, for the spot flavors the workload's queue may admit it to."""
        queue = workload.annotated(QUEUE_LABEL)
        if not queue:
            return {}
        return {f"ResourceFlavor/{name}": providers for name, providers in
                self.queues.get(self.local.get(f"{workload.namespace}/{queue}") or "", {}).items()}


def exposures(workloads: list[Workload], capacity: SpotCapacity) -> Iterator[tuple[Workload, dict[str, set[str]]]]:
    """Each workload that can land on spot capacity, with where from (-> its providers)."""
    for workload in workloads:
        exposure = capacity.through_queue(workload)
        for template in workload.templates:
            providers = template_providers(template)
            if providers:
                exposure["its pod template's node selection"] = providers
        if exposure:
            yield workload, exposure


def grace_seconds(workload: Workload) -> int:
    """The shortest terminationGracePeriodSeconds of its pod templates (Kubernetes' default 30)."""
    graces = [t.spec.get("terminationGracePeriodSeconds", DEFAULT_GRACE) for t in workload.templates]
    return min((g for g in graces if isinstance(g, int)), default=DEFAULT_GRACE)


Exposed = list[tuple[Workload, dict[str, set[str]]]]  # what exposures() yields, kept for both uses


def spot_findings(exposed: Exposed, notice: dict[str, int]) -> Iterator[dict]:
    for workload, exposure in exposed:
        yield from _judge(workload, exposure, notice)


def preemptible_jobs(exposed: Exposed, notice: dict[str, int]) -> list[dict]:
    """Every spot-capable workload (flagged or not), as the fact the audit joins with the
    measured save durations of the training runs it writes (docs/readiness.md, check 3)."""
    return [{"job": f"{w.namespace}/{w.name}", "object": w.ref, "providers": sorted(set().union(*e.values())),
             "notice_seconds": max(notice[p] for p in set().union(*e.values())), "grace_seconds": grace_seconds(w)}
            for w, e in exposed]


def _judge(workload: Workload, exposure: dict[str, set[str]], notice: dict[str, int]) -> Iterator[dict]:
    via = "; ".join(f"{where} ({', '.join(sorted(p))})" for where, p in sorted(exposure.items()))
    providers = set().union(*exposure.values())
    window = max(notice[p] for p in providers)
    grace = grace_seconds(workload)
    if grace < window:
        yield finding("spot-grace-too-short", workload.ref,
                      f"{workload.ref} can run on spot capacity through {via}, whose notice is {window} s, but its "
                      f"pods get {grace} s (terminationGracePeriodSeconds) to stop: the save is cut short",
                      grace_seconds=grace, notice_seconds=window, providers=sorted(providers))
    hooks = any((c.get("lifecycle") or {}).get("preStop") for t in workload.templates for c in containers(t))
    if not hooks and (workload.annotated(SIGTERM_KEY) or "").lower() != "true":
        yield finding("spot-no-shutdown-handling", workload.ref,
                      f"{workload.ref} can run on spot capacity through {via}, and neither a preStop hook nor "
                      f"declared SIGTERM handling ({SIGTERM_KEY}) saves its state when the notice comes",
                      providers=sorted(providers))
