"""Serving high availability: an inference service must survive a node, a rollout and a drain.

Which workloads serve (decided here, documented in docs/exporters/kubernetes.md): every KServe
InferenceService; a Deployment, StatefulSet or LeaderWorkerSet labelled or annotated
`dr.io/serving: "true"` (on the object or its pod template), or named by the plan
(`readiness.serving`, `namespace/name` globs). `dr.io/serving: "false"` leaves any of them out.

  serving-replicas-not-independent  fewer than two replicas (LeaderWorkerSet: groups;
                       InferenceService: minReplicas), or replicas the scheduler may put on one
                       node (no required anti-affinity nor DoNotSchedule topology spread on
                       kubernetes.io/hostname), or in one zone when `readiness.zones` is set
  serving-startup-probe-short  no container with a startupProbe allowing `model_load_seconds`
                       (initialDelaySeconds + failureThreshold x periodSeconds, the defaults
                       0 + 3 x 10): the liveness probe kills a server still loading its model,
                       so after a restore or a node loss the service never comes back
  serving-readiness-tcp-only   no readinessProbe, or only tcpSocket ones: the port opens before
                       the model is loaded, and traffic reaches a server that cannot answer
  serving-no-drain     no preStop hook, or no terminationGracePeriodSeconds of its own: a drain
                       or rollout cuts the streams in flight
"""

from __future__ import annotations

import fnmatch
from typing import Iterator

from dr.exporters.kubernetes.readiness.codes import finding
from dr.exporters.kubernetes.readiness.workloads import HOSTNAME, ZONE, Workload, containers, spreads

SERVING_KEY = "dr.io/serving"
_MARKABLE = {"Deployment", "StatefulSet", "LeaderWorkerSet"}


def is_serving(workload: Workload, named: list[str]) -> bool:
    marked = (workload.annotated(SERVING_KEY) or "").lower()
    if marked == "false":
        return False
    if workload.kind == "InferenceService":
        return True
    if workload.kind not in _MARKABLE:
        return False
    return marked == "true" or any(fnmatch.fnmatchcase(f"{workload.namespace}/{workload.name}", p) for p in named)


def serving_findings(workloads: list[Workload], options) -> Iterator[dict]:
    for workload in workloads:
        if is_serving(workload, options.serving):
            yield from _independent(workload, options.zones)
            yield from _startup(workload, options.model_load_seconds)
            yield from _readiness(workload)
            yield from _drain(workload)


def _independent(workload: Workload, zones: bool) -> Iterator[dict]:
    unit = "replica group(s)" if workload.kind == "LeaderWorkerSet" else "replica(s)"
    replicas = workload.replicas or 0
    if replicas < 2:
        yield finding("serving-replicas-not-independent", workload.ref,
                      f"{workload.ref} runs {replicas} {unit}: one node, one eviction or one crash takes the service "
                      "down", topology=None)
        return
    for key in (HOSTNAME, ZONE) if zones else (HOSTNAME,):
        if not any(spreads(t, key, required=True) for t in workload.templates):
            yield finding("serving-replicas-not-independent", workload.ref,
                          f"{workload.ref} runs {replicas} {unit}, but nothing keeps them apart on {key} (no "
                          "required pod anti-affinity nor a DoNotSchedule topology spread constraint): they may "
                          "share one and fail together", topology=key)


def _seconds(probe: dict, key: str, default: int) -> int:
    value = probe.get(key, default)
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def _probe_budget(probe: dict) -> int:
    """How long a startupProbe lets a container start (the API's defaults: 0 + 3 x 10 s)."""
    return _seconds(probe, "initialDelaySeconds", 0) + _seconds(probe, "failureThreshold", 3) * \
        _seconds(probe, "periodSeconds", 10)


def _startup(workload: Workload, load_seconds: int) -> Iterator[dict]:
    budgets = [_probe_budget(c["startupProbe"]) for t in workload.templates for c in containers(t)
               if isinstance(c.get("startupProbe"), dict)]
    if budgets and max(budgets) >= load_seconds:
        return
    what = (f"its longest startupProbe allows {max(budgets)} s" if budgets else "no container has a startupProbe")
    yield finding("serving-startup-probe-short", workload.ref,
                  f"{workload.ref}: {what}, and loading a model may take {load_seconds} s (readiness."
                  "model_load_seconds): the liveness probe restarts a server still loading, so it never comes "
                  "back after a restore or a node loss", model_load_seconds=load_seconds)


def _readiness(workload: Workload) -> Iterator[dict]:
    probes = [c["readinessProbe"] for t in workload.templates for c in containers(t)
              if isinstance(c.get("readinessProbe"), dict)]
    if any(("httpGet" in p) or ("grpc" in p) or ("exec" in p) for p in probes):
        return
    what = "only tcpSocket readiness probes" if probes else "no readinessProbe"
    yield finding("serving-readiness-tcp-only", workload.ref,
                  f"{workload.ref} has {what}: the port opens before the model is loaded, and requests reach a "
                  "server that cannot answer them")


def _drain(workload: Workload) -> Iterator[dict]:
    hooks = any(((c.get("lifecycle") or {}).get("preStop")) for t in workload.templates for c in containers(t))
    grace = any(t.spec.get("terminationGracePeriodSeconds") is not None for t in workload.templates)
    if hooks and grace:
        return
    missing = " and ".join(m for m, present in (("no preStop hook", hooks),
                                                ("no terminationGracePeriodSeconds of its own (30 s)", grace))
                           if not present)
    yield finding("serving-no-drain", workload.ref,
                  f"{workload.ref} has {missing}: a drain, a rollout or a failover cuts the requests and streams "
                  "in flight instead of finishing them")
