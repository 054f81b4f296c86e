"""The chart's values.yaml and values.schema.json: what a chart user may set, with the defaults
that make the chart render exactly the objects `--format yaml` writes.

Pod placement (nodeSelector, tolerations, affinity, imagePullSecrets) applies to every CronJob;
schedules, resources, deadlines and extra arguments are per CronJob, by name. The schema is
written from the same defaults, so `helm lint` and `helm install` refuse a value of the wrong
shape (a string for a deadline, a map for tolerations) before anything reaches the cluster.
"""

from __future__ import annotations

import json

from dr.deploy.objects import SECRET, STARTING_DEADLINE_SECONDS
from dr.deploy.rendering import Rendering
from dr.deploy.writing import _comments, dump

# the label kube-prometheus-stack's Prometheus selects PrometheusRules by, by default
PROMETHEUS_RULE_LABELS = {"release": "kube-prometheus-stack"}


def defaults(rendering: Rendering) -> dict:
    by_name = {j.name: j for j in rendering.jobs}
    return {"image": rendering.image,
            "imagePullSecrets": [],
            "serviceAccount": {"annotations": {}},
            "schedules": {name: job.schedule for name, job in by_name.items()},
            "resources": {d.obj["metadata"]["name"]: _container(d.obj)["resources"]
                          for d in rendering.docs if d.obj["kind"] == "CronJob"},
            "startingDeadlineSeconds": STARTING_DEADLINE_SECONDS,
            "activeDeadlineSeconds": {name: job.deadline_seconds for name, job in by_name.items()},
            "extraArgs": {name: [] for name in by_name},
            "nodeSelector": {}, "tolerations": [], "affinity": {},
            "existingSecret": SECRET,
            "metrics": {"file": "", "pushgateway": rendering.pushgateway or ""},
            "cache": {"existingClaim": ""},
            "networkPolicy": {"extraEgress": []},
            "prometheusRule": {"enabled": True, "labels": dict(PROMETHEUS_RULE_LABELS)}}


def _container(cronjob: dict) -> dict:
    return cronjob["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]


def values_yaml(rendering: Rendering) -> str:
    return _comments([
        "image: dr's image; pull it from a registry that survives what the plan protects against.",
        "imagePullSecrets: [{name: ...}] for a private registry.",
        "serviceAccount.annotations: e.g. eks.amazonaws.com/role-arn (IRSA) or iam.gke.io/gcp-service-account",
        "  (Workload Identity): then leave the aws-* keys out of the Secret.",
        "schedules: every CronJob's, by name: a backup per distinct schedule of the plan, then prune, verify,",
        "  status and audit (per target when the plan has several).",
        f"resources: {rendering.resources_why}.",
        "startingDeadlineSeconds, activeDeadlineSeconds (by CronJob): how late a run may start, how long it may run.",
        "extraArgs: arguments appended to a CronJob's dr command, by name (e.g. [--read-data] for a status).",
        "nodeSelector, tolerations, affinity: where every dr pod runs.",
        "existingSecret: the Secret holding the credentials (keys: see templates/NOTES.txt); never values.",
        "metrics: optional; when set, passed to every dr command as --metrics-file / --pushgateway. A",
        "  Pushgateway set here (not with dr deploy render --pushgateway) needs its egress in",
        "  networkPolicy.extraEgress.",
        "cache.existingClaim: a PersistentVolumeClaim for the manifest cache (DR_CACHE_DIR), kept between runs",
        "  (ReadWriteMany when CronJobs run on several nodes at once); empty: an emptyDir, lost every run.",
        "networkPolicy.extraEgress: NetworkPolicy egress rules added to the rendered ones.",
        "prometheusRule: the alert rules (docs/metrics.md), rendered when the cluster has the Prometheus",
        "  Operator's CRD; labels: what your Prometheus selects rules by."]) + dump(defaults(rendering))


def schema(rendering: Rendering) -> str:
    return json.dumps(_schema_of(defaults(rendering), top=True), indent=2, sort_keys=True) + "\n"


_TYPES = {bool: "boolean", int: "integer", str: "string", list: "array"}


def _schema_of(value, top: bool = False) -> dict:
    """Each key's type from its default; a map by CronJob name takes any name, each value shaped as
    the defaults' first; the top level refuses unknown keys (a misspelt value is not ignored)."""
    if not isinstance(value, dict):
        return {"type": _TYPES[type(value)]}
    if value and all(k.startswith("dr-") for k in value):
        return {"type": "object", "additionalProperties": _schema_of(next(iter(value.values())))}
    out = {"type": "object", "properties": {k: _schema_of(v) for k, v in value.items()}}
    if top:
        out["$schema"], out["additionalProperties"] = "http://json-schema.org/draft-07/schema#", False
    return out
