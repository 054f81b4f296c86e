"""What the readiness checks need to know about a workload: its replicas, its pod templates, their labels.

A workload is any listed object with a pod template. The replicas are known for the kinds that
keep a count of identical pods: Deployment, StatefulSet, ReplicaSet (`spec.replicas`, default
1), LeaderWorkerSet (`spec.replicas` groups of `leaderWorkerTemplate.size` pods; a group is
what fails and restarts together, so the checks count groups) and KServe InferenceService
(`spec.predictor.minReplicas`, default 1; its predictor is a pod spec whose model server is
`model`, or `containers`). For other kinds (Jobs, JobSets, training operators) the replicas are
not counted, and the pod templates are found by their shape (scanning.pod_specs).

Workloads are kept until every list finished, so a Template keeps only the pod spec fields the
checks read (POD_FIELDS, CONTAINER_FIELDS), not the listed pod spec: holding every listed pod
spec until the end grew a backup's memory with the object count (213 MB at 50,000
LeaderWorkerSets) and made each full garbage collection walk all of them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterator

from dr.exporters.kubernetes.refchecks import referrer, spec
from dr.exporters.kubernetes.scanning import pod_specs

LWS_NAME_LABEL = "leaderworkerset.sigs.k8s.io/name"
ISVC_LABEL = "serving.kserve.io/inferenceservice"
HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
_COUNTED = {"Deployment", "StatefulSet", "ReplicaSet"}
# What spot.py, serving.py and spreads() read of a pod spec, and of each of its containers.
POD_FIELDS = ("nodeSelector", "affinity", "tolerations", "topologySpreadConstraints",
              "terminationGracePeriodSeconds")
CONTAINER_FIELDS = ("lifecycle", "startupProbe", "readinessProbe")


@dataclass(frozen=True, slots=True)  # slots: one is kept per listed pod template
class Template:
    """One pod template: the labels its pods carry and its pod spec."""

    labels: dict[str, str]
    spec: dict  # only POD_FIELDS and the containers' CONTAINER_FIELDS (read_fields)
    annotations: dict[str, str] = field(default_factory=dict)


@dataclass(slots=True)  # one is kept per listed workload until every list finished
class Workload:
    kind: str
    namespace: str
    name: str
    ref: str  # Kind/ns/name, as findings name objects
    labels: dict[str, str]
    annotations: dict[str, str]
    templates: list[Template]
    replicas: int | None = None  # pods, or groups for a LeaderWorkerSet; None: not counted
    group_size: int = 1  # pods per replica group

    @property
    def pods(self) -> int | None:
        return None if self.replicas is None else self.replicas * self.group_size

    def annotated(self, key: str) -> str | None:
        """The object's annotation or label `key`, else the first pod template's."""
        for values in (self.annotations, self.labels, *(t.annotations for t in self.templates),
                       *(t.labels for t in self.templates)):
            if key in values:
                return str(values[key])
        return None


def workload_of(obj: dict) -> Workload | None:
    kind = obj.get("kind", "")
    meta = obj.get("metadata") or {}
    base = dict(kind=kind, namespace=meta.get("namespace") or "", name=meta.get("name") or "",
                ref=referrer(kind, obj), labels=_strings(meta.get("labels")),
                annotations=_strings(meta.get("annotations")))
    body = spec(obj)
    if kind in _COUNTED and isinstance(body.get("template"), dict):
        return Workload(**base, templates=[_template(body["template"])], replicas=_count(body.get("replicas"), 1))
    if kind == "LeaderWorkerSet":
        return _leader_worker_set(base, body)
    if kind == "InferenceService":
        return _inference_service(base, body)
    templates = [_found(obj, path, pod_spec) for path, pod_spec in pod_specs(obj)]
    return Workload(**base, templates=templates) if templates else None


def _leader_worker_set(base: dict, body: dict) -> Workload:
    lwt = body.get("leaderWorkerTemplate") or {}
    extra = {LWS_NAME_LABEL: base["name"]}  # the LWS controller labels every pod of the set
    templates = [_template(lwt[key], extra) for key in ("leaderTemplate", "workerTemplate")
                 if isinstance(lwt.get(key), dict)]
    return Workload(**base, templates=templates, replicas=_count(body.get("replicas"), 1),
                    group_size=_count(lwt.get("size"), 1))


def _inference_service(base: dict, body: dict) -> Workload:
    predictor = body.get("predictor") if isinstance(body.get("predictor"), dict) else {}
    containers = [c for c in predictor.get("containers") or [] if isinstance(c, dict)]
    if isinstance(predictor.get("model"), dict):
        containers = [predictor["model"], *containers]
    pod_spec = {**predictor, "containers": containers}
    labels = {**_strings(predictor.get("labels")), ISVC_LABEL: base["name"]}
    template = Template(labels, read_fields(pod_spec), _strings(predictor.get("annotations")))
    return Workload(**base, templates=[template], replicas=_count(predictor.get("minReplicas"), 1))


def _found(obj: dict, path: tuple, pod_spec: dict) -> Template:
    """A pod spec found by its shape, with the labels of the template around it (a Pod's own)."""
    node: Any = obj
    for part in path[:-1]:
        node = node[part]
    meta = node.get("metadata") if isinstance(node, dict) else None
    meta = meta if isinstance(meta, dict) else {}
    return Template(_strings(meta.get("labels")), read_fields(pod_spec), _strings(meta.get("annotations")))


def _template(template: dict, extra: dict[str, str] | None = None) -> Template:
    meta = template.get("metadata") or {}
    return Template({**_strings(meta.get("labels")), **(extra or {})}, read_fields(spec(template)),
                    _strings(meta.get("annotations")))


def read_fields(pod_spec: dict) -> dict:
    """The part of `pod_spec` the checks read: its POD_FIELDS, and its containers with only
    their CONTAINER_FIELDS (the values are the listed ones, not copies)."""
    kept = {key: pod_spec[key] for key in POD_FIELDS if key in pod_spec}
    if "containers" in pod_spec:
        listed = pod_spec["containers"]
        kept["containers"] = [{key: c[key] for key in CONTAINER_FIELDS if key in c} if isinstance(c, dict) else c
                              for c in listed] if isinstance(listed, list) else listed
    return kept


def _strings(values: Any) -> dict[str, str]:
    return {str(k): str(v) for k, v in values.items()} if isinstance(values, dict) else {}


def _count(value: Any, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else default


def containers(template: Template) -> Iterator[dict]:
    """The template's long-running containers (init and ephemeral containers serve no traffic)."""
    yield from (c for c in template.spec.get("containers") or [] if isinstance(c, dict))


def spreads(template: Template, key: str, required: bool) -> bool:
    """Whether the scheduler keeps the template's pods apart on topology `key`: pod anti-affinity
    on that key (required, or also preferred when `required` is False), or a topology spread
    constraint on it (DoNotSchedule, or also ScheduleAnyway when `required` is False)."""
    anti = (template.spec.get("affinity") or {}).get("podAntiAffinity") or {}
    terms = list(anti.get("requiredDuringSchedulingIgnoredDuringExecution") or [])
    if not required:
        terms += [(t or {}).get("podAffinityTerm") or {}
                  for t in anti.get("preferredDuringSchedulingIgnoredDuringExecution") or []]
    if any(isinstance(t, dict) and t.get("topologyKey") == key for t in terms):
        return True
    for constraint in template.spec.get("topologySpreadConstraints") or []:
        if isinstance(constraint, dict) and constraint.get("topologyKey") == key and \
                (not required or constraint.get("whenUnsatisfiable", "DoNotSchedule") == "DoNotSchedule"):
            return True
    return False


def selects(selector: Any, labels: dict[str, str]) -> bool:
    """A metav1.LabelSelector against a pod's labels: `{}` selects every pod, null none."""
    if not isinstance(selector, dict):
        return False
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != str(value):
            return False
    return all(_expression(e, labels) for e in selector.get("matchExpressions") or [] if isinstance(e, dict))


def _expression(expression: dict, labels: dict[str, str]) -> bool:
    key, operator = expression.get("key"), expression.get("operator")
    values = [str(v) for v in expression.get("values") or []]
    if operator == "In":
        return labels.get(key) in values
    if operator == "NotIn":
        return labels.get(key) not in values
    if operator == "Exists":
        return key in labels
    if operator == "DoesNotExist":
        return key not in labels
    return False  # an operator the API server would have refused
