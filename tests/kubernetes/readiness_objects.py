"""Hand-written objects for the readiness checks: each problem, and its independent twin that is right.

Namespaces: `pdbs` (disruption budgets), `serving` (Deployments, InferenceServices, a
LeaderWorkerSet from upstream), `train` (jobs on Kueue flavors). The upstream Kueue and LWS
examples are read from the shared fixtures (tests/kubernetes/upstream.py), never copied; the
KServe InferenceService CRD is not among them, so INFERENCE_SERVICE_CRD defines a minimal one.
"""

from __future__ import annotations

import copy

from tests.kubernetes.upstream import upstream

HOST, ZONE = "kubernetes.io/hostname", "topology.kubernetes.io/zone"
IMAGE = "registry.k8s.io/e2e-test-images/agnhost:2.53"


def ns(name: str) -> dict:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


def spread(*keys: str, when: str = "DoNotSchedule", app: str = "x") -> list[dict]:
    return [{"maxSkew": 1, "topologyKey": key, "whenUnsatisfiable": when,
             "labelSelector": {"matchLabels": {"app": app}}} for key in keys]


def deployment(name: str, namespace: str, replicas: int = 3, labels: dict | None = None,
               annotations: dict | None = None, pod: dict | None = None, container: dict | None = None) -> dict:
    template_labels = {"app": name}
    server = _set({"name": "server", "image": IMAGE, **(container or {})})
    pod_spec = _set({"containers": [server], **(pod or {})})
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": namespace, "labels": labels or {},
                         "annotations": annotations or {}},
            "spec": {"replicas": replicas, "selector": {"matchLabels": template_labels},
                     "template": {"metadata": {"labels": template_labels}, "spec": pod_spec}}}


def _set(fields: dict) -> dict:
    """The fields that have a value (None: the case leaves that field out)."""
    return {k: v for k, v in fields.items() if v is not None}


def pdb(name: str, namespace: str, selector: dict | None, policy: str | None = "AlwaysAllow", **budget) -> dict:
    body = {**budget, "selector": selector}
    if policy:
        body["unhealthyPodEvictionPolicy"] = policy
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
            "metadata": {"name": name, "namespace": namespace}, "spec": body}


# -- disruption budgets: every Deployment is spread on hostname unless the case is about spread --
def _spread_pod(app: str) -> dict:
    return {"topologySpreadConstraints": spread(HOST, app=app)}


def pdb_objects() -> list[dict]:
    apps = {name: deployment(name, "pdbs", replicas, pod=_spread_pod(name)) for name, replicas in
            (("full", 3), ("single", 1), ("frozen", 3), ("ok", 3), ("shared", 2), ("policy", 2), ("policy-ok", 2),
             ("alone", 2))}
    apps["crowded"] = deployment("crowded", "pdbs", 3)  # no spread at all
    apps["spread-soft"] = deployment("spread-soft", "pdbs", 3, pod={"affinity": {"podAntiAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 100, "podAffinityTerm": {"topologyKey": HOST,
                                                "labelSelector": {"matchLabels": {"app": "spread-soft"}}}}]}}})
    by = lambda app: {"matchLabels": {"app": app}}  # noqa: E731
    budgets = [
        pdb("full", "pdbs", by("full"), minAvailable=3),             # pdb-blocks-drain: minAvailable == replicas
        pdb("single", "pdbs", by("single"), minAvailable=1),         # pdb-blocks-drain: 1 of a single replica
        pdb("frozen", "pdbs", by("frozen"), maxUnavailable=0),       # pdb-blocks-drain: maxUnavailable 0
        pdb("ok", "pdbs", by("ok"), minAvailable="60%"),             # twin: 2 of 3 must stay, 1 may go
        pdb("orphan", "pdbs", by("renamed")),                        # pdb-selects-nothing
        pdb("shared-a", "pdbs", by("shared"), maxUnavailable=1),     # pdb-overlap (with shared-b)
        pdb("shared-b", "pdbs", {"matchExpressions": [{"key": "app", "operator": "In", "values": ["shared"]}]},
            maxUnavailable=1),
        pdb("alone", "pdbs", by("alone"), maxUnavailable=1),         # twin of overlap and selects-nothing
        pdb("policy", "pdbs", by("policy"), policy=None, maxUnavailable=1),  # pdb-unhealthy-policy-missing
        pdb("policy-ok", "pdbs", by("policy-ok"), policy="AlwaysAllow", maxUnavailable=1),  # twin
        pdb("crowded", "pdbs", by("crowded"), maxUnavailable=1),     # pdb-no-spread
        pdb("spread-soft", "pdbs", by("spread-soft"), maxUnavailable=1),  # twin: preferred anti-affinity spreads
    ]
    return [ns("pdbs"), *apps.values(), *budgets]


def leader_worker_sets(namespace: str) -> list[dict]:
    """Upstream's LeaderWorkerSet sample (3 groups of 4 pods) twice: as it is, and spread."""
    [sample] = upstream("lws/examples/leaderworkerset_v1_leaderworkerset.yaml")
    plain = copy.deepcopy(sample)
    plain["metadata"]["namespace"] = namespace
    spread_out = copy.deepcopy(plain)
    spread_out["metadata"]["name"] = "lws-spread"
    spread_out["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["topologySpreadConstraints"] = [
        {"maxSkew": 1, "topologyKey": HOST, "whenUnsatisfiable": "DoNotSchedule",
         "labelSelector": {"matchLabels": {"leaderworkerset.sigs.k8s.io/name": "lws-spread"}}}]
    group_pdb = lambda name, minimum: pdb(name, namespace, {  # noqa: E731
        "matchLabels": {"leaderworkerset.sigs.k8s.io/name": name if name == "lws-spread" else plain["metadata"]["name"]}},
        minAvailable=minimum)
    # What the LWS controller creates: the leaders' StatefulSet, owned by the set. Judged through
    # its owner, never counted twice.
    leaders = {"apiVersion": "apps/v1", "kind": "StatefulSet",
               "metadata": {"name": plain["metadata"]["name"], "namespace": namespace, "ownerReferences": [
                   {"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet", "controller": True,
                    "name": plain["metadata"]["name"], "uid": "0b7e6a52-4c1d-4f7e-9d55-2f0c1a3b9e11"}]},
               "spec": {"replicas": 3, "selector": {"matchLabels": {"leaderworkerset.sigs.k8s.io/name": "x"}},
                        "template": {"metadata": {"labels": {
                            "leaderworkerset.sigs.k8s.io/name": plain["metadata"]["name"]}},
                            "spec": plain["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]}}}
    # 12 pods: minAvailable 10 lets 2 go, less than a group of 4 (flagged); 8 lets one group go (twin)
    return [plain, spread_out, leaders, group_pdb("leaderworkerset-sample-budget", 10), group_pdb("lws-spread", 8)]


# -- serving ----------------------------------------------------------------------------------------
GOOD_SERVER = {"startupProbe": {"httpGet": {"path": "/health", "port": 8000}, "periodSeconds": 10,
                                "failureThreshold": 60},
               "readinessProbe": {"httpGet": {"path": "/health", "port": 8000}},
               "lifecycle": {"preStop": {"exec": {"command": ["sh", "-c", "sleep 20"]}}}}
GOOD_POD = {"terminationGracePeriodSeconds": 120, "topologySpreadConstraints": spread(HOST, ZONE, app="llm")}
SERVING = {"dr.io/serving": "true"}


def serving_objects() -> list[dict]:
    def llm(name: str, replicas: int = 2, pod: dict | None = None, container: dict | None = None, **meta) -> dict:
        return deployment(name, "serving", replicas, pod={**GOOD_POD, **(pod or {})},
                          container={**GOOD_SERVER, **(container or {})}, **meta)
    return [
        ns("serving"),
        llm("llm-ok", labels=SERVING),                                            # twin of every serving check
        llm("llm-one", replicas=1, labels=SERVING),                               # one replica
        llm("llm-packed", pod={"topologySpreadConstraints": spread(HOST, when="ScheduleAnyway", app="llm")},
            annotations=SERVING),                                                 # soft spread only
        llm("llm-anti", pod={"topologySpreadConstraints": [], "affinity": {"podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"topologyKey": HOST, "labelSelector": {"matchLabels": {"app": "llm"}}},
                {"topologyKey": ZONE, "labelSelector": {"matchLabels": {"app": "llm"}}}]}}},
            labels=SERVING),                                                       # twin: required anti-affinity
        llm("llm-no-startup", container={"startupProbe": None}, labels=SERVING),
        llm("llm-short-startup", container={"startupProbe": {"httpGet": {"path": "/health", "port": 8000}}},
            labels=SERVING),                                                       # 3 x 10 s
        llm("llm-tcp", container={"readinessProbe": {"tcpSocket": {"port": 8000}}}, labels=SERVING),
        llm("llm-no-prestop", container={"lifecycle": None}, labels=SERVING),
        llm("llm-default-grace", pod={"terminationGracePeriodSeconds": None}, labels=SERVING),
        deployment("batch-tool", "serving", 1),                                    # not serving: not judged
        llm("llm-opted-out", replicas=1, labels={"dr.io/serving": "false"}),
        deployment("named-by-plan", "serving", 1),                                 # serving through the plan option
        isvc("isvc-default"),                                                      # KServe defaults: 1 replica ...
        isvc("isvc-ok", {"minReplicas": 2, "terminationGracePeriodSeconds": 120,
                         "topologySpreadConstraints": spread(HOST, ZONE, app="isvc-ok")}, GOOD_SERVER),
    ]


def isvc(name: str, predictor: dict | None = None, model: dict | None = None) -> dict:
    model_spec = {"modelFormat": {"name": "huggingface"}, "storageUri": "hf://meta-llama/Llama-3.1-8B",
                  **(model or {})}
    return {"apiVersion": "serving.kserve.io/v1beta1", "kind": "InferenceService",
            "metadata": {"name": name, "namespace": "serving"},
            "spec": {"predictor": {**(predictor or {}), "model": model_spec}}}


INFERENCE_SERVICE_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "inferenceservices.serving.kserve.io"},
    "spec": {"group": "serving.kserve.io", "scope": "Namespaced",
             "names": {"plural": "inferenceservices", "singular": "inferenceservice", "kind": "InferenceService",
                       "shortNames": ["isvc"]},
             "versions": [{"name": "v1beta1", "served": True, "storage": True,
                           "schema": {"openAPIV3Schema": {"type": "object",
                                                          "x-kubernetes-preserve-unknown-fields": True}}}]}}


# -- spot -------------------------------------------------------------------------------------------
def spot_objects() -> list[dict]:
    """Upstream's spot flavor (a generic `instance-type: spot` label, a `spot` taint) and quick-start
    queues, a GKE spot flavor, and jobs: upstream's sample job on the on-demand queue is the twin."""
    [spot_flavor] = upstream("kueue/examples/admin_resource-flavor-taints.yaml")
    quick_start = upstream("kueue/examples/getting-started_quick-start-setup.yaml")
    for doc in quick_start:
        if doc["kind"] == "LocalQueue":
            doc["metadata"]["namespace"] = "train"
    gke = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": "gke-spot"},
           "spec": {"nodeLabels": {"cloud.google.com/gke-spot": "true"}}}
    spot_cq = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "spot-cq"},
               "spec": {"namespaceSelector": {}, "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
                   {"name": "spot", "resources": [{"name": "cpu", "nominalQuota": 9}]},
                   {"name": "gke-spot", "resources": [{"name": "cpu", "nominalQuota": 9}]}]}]}}
    spot_lq = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
               "metadata": {"name": "spot-queue", "namespace": "train"}, "spec": {"clusterQueue": "spot-cq"}}
    [sample] = upstream("kueue/examples/jobs_sample-job.yaml")

    def job(name: str, queue: str, pod: dict | None = None, annotations: dict | None = None,
            container: dict | None = None) -> dict:
        made = copy.deepcopy(sample)
        made["metadata"] = {"name": name, "namespace": "train", "labels": {"kueue.x-k8s.io/queue-name": queue},
                            "annotations": annotations or {}}
        made["spec"]["template"]["spec"].update(pod or {})
        made["spec"]["template"]["spec"]["containers"][0].update(container or {})
        return made
    handled = {"dr.io/handles-sigterm": "true"}
    prestop = {"lifecycle": {"preStop": {"exec": {"command": ["/bin/sh", "-c", "kill -USR1 1; sleep 25"]}}}}
    aws_pod = {"nodeSelector": {"eks.amazonaws.com/capacityType": "SPOT"}, "terminationGracePeriodSeconds": 120}
    return [ns("train"), spot_flavor, gke, spot_cq, spot_lq, *quick_start,
            job("on-demand", "user-queue"),                                  # twin: upstream's job, default flavor
            job("spot-naive", "spot-queue"),                                 # no handling; 30 s < the plan's 60 s
            job("spot-ready", "spot-queue", {"terminationGracePeriodSeconds": 60}, handled),  # twin
            job("spot-prestop", "spot-queue", {"terminationGracePeriodSeconds": 60}, container=prestop),  # twin
            job("aws-short", "none", {"nodeSelector": {"eks.amazonaws.com/capacityType": "SPOT"}}, handled),
            job("aws-ok", "none", aws_pod, handled),                         # twin: 120 s on EC2 Spot
            job("aws-on-demand", "none", {"nodeSelector": {"eks.amazonaws.com/capacityType": "ON_DEMAND"}})]


def all_objects() -> list[dict]:
    return [*pdb_objects(), *serving_objects(), *leader_worker_sets("serving"), *spot_objects()]


# What the checks must find over all_objects() with PLAN_READINESS: (code, object); nothing else.
PLAN_READINESS = {"serving": ["serving/named-by-plan", "serving/leaderworkerset-sample"], "zones": True,
                  "spot_notice_seconds": {"other": 60}}
EXPECTED = {
    ("pdb-blocks-drain", "PodDisruptionBudget/pdbs/full"),
    ("pdb-blocks-drain", "PodDisruptionBudget/pdbs/single"),
    ("pdb-blocks-drain", "PodDisruptionBudget/pdbs/frozen"),
    ("pdb-blocks-drain", "PodDisruptionBudget/serving/leaderworkerset-sample-budget"),
    ("pdb-selects-nothing", "PodDisruptionBudget/pdbs/orphan"),
    ("pdb-overlap", "Deployment/pdbs/shared"),
    ("pdb-unhealthy-policy-missing", "PodDisruptionBudget/pdbs/policy"),
    ("pdb-no-spread", "PodDisruptionBudget/pdbs/crowded"),
    ("pdb-no-spread", "PodDisruptionBudget/serving/leaderworkerset-sample-budget"),
    ("serving-replicas-not-independent", "Deployment/serving/llm-one"),
    ("serving-replicas-not-independent", "Deployment/serving/llm-packed"),
    ("serving-replicas-not-independent", "Deployment/serving/named-by-plan"),
    ("serving-replicas-not-independent", "InferenceService/serving/isvc-default"),
    ("serving-replicas-not-independent", "LeaderWorkerSet/serving/leaderworkerset-sample"),
    ("serving-startup-probe-short", "Deployment/serving/llm-no-startup"),
    ("serving-startup-probe-short", "Deployment/serving/llm-short-startup"),
    ("serving-startup-probe-short", "Deployment/serving/named-by-plan"),
    ("serving-startup-probe-short", "InferenceService/serving/isvc-default"),
    ("serving-startup-probe-short", "LeaderWorkerSet/serving/leaderworkerset-sample"),
    ("serving-readiness-tcp-only", "Deployment/serving/llm-tcp"),
    ("serving-readiness-tcp-only", "Deployment/serving/named-by-plan"),
    ("serving-readiness-tcp-only", "InferenceService/serving/isvc-default"),
    ("serving-readiness-tcp-only", "LeaderWorkerSet/serving/leaderworkerset-sample"),
    ("serving-no-drain", "Deployment/serving/llm-no-prestop"),
    ("serving-no-drain", "Deployment/serving/llm-default-grace"),
    ("serving-no-drain", "Deployment/serving/named-by-plan"),
    ("serving-no-drain", "InferenceService/serving/isvc-default"),
    ("serving-no-drain", "LeaderWorkerSet/serving/leaderworkerset-sample"),
    ("spot-grace-too-short", "Job/train/spot-naive"),
    ("spot-grace-too-short", "Job/train/aws-short"),
    ("spot-no-shutdown-handling", "Job/train/spot-naive"),
}
