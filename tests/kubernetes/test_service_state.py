"""What lies behind a Service (servicestate.py): its selector against the namespace's pod templates."""

from __future__ import annotations

from dr.exporters.kubernetes.resources import ResourceType
from dr.exporters.kubernetes.servicestate import STATEFUL, STATELESS, ServiceState

SVC = ResourceType("", "v1", "services", "Service", True)
STS = ResourceType("apps", "v1", "statefulsets", "StatefulSet", True)
DEPLOY = ResourceType("apps", "v1", "deployments", "Deployment", True)
POD = ResourceType("", "v1", "pods", "Pod", True)


def _meta(name: str, namespace: str = "ml", labels: dict | None = None) -> dict:
    return {"name": name, "namespace": namespace, **({"labels": labels} if labels else {})}


def _service(name: str, selector: dict | None, namespace: str = "ml") -> dict:
    return {"metadata": _meta(name, namespace), "spec": {"selector": selector} if selector else {"type": "ExternalName"}}


def _workload(name: str, labels: dict, volumes: list | None = None, claims: list | None = None,
              replicas: int = 1) -> dict:
    spec = {"replicas": replicas, "template": {"metadata": {"labels": labels},
                                               "spec": {"containers": [{"name": "c", "image": "x"}],
                                                        "volumes": volumes or []}}}
    if claims is not None:
        spec["volumeClaimTemplates"] = [{"metadata": {"name": c}} for c in claims]
    return {"metadata": _meta(name), "spec": spec}


def _facts(*observed) -> dict[str, tuple[str, str]]:
    state = ServiceState()
    for rtype, obj in observed:
        state.observe(rtype, obj)
    return {d.reference.split(".")[0]: (d.kind, d.detail) for ns in ("ml", "other") for d in state.dependencies(ns)}


def test_claims_of_every_shape_make_a_service_stateful_and_the_detail_names_them():
    facts = _facts((SVC, _service("db", {"app": "db"})), (STS, _workload("db", {"app": "db", "v": "1"}, claims=["data"],
                                                                          replicas=3)),
                   (SVC, _service("files", {"app": "files"})),
                   (DEPLOY, _workload("files", {"app": "files"}, volumes=[{"name": "v", "persistentVolumeClaim":
                                                                            {"claimName": "shared"}}])),
                   (SVC, _service("pod", {"app": "solo"})),
                   (POD, {"metadata": _meta("solo", labels={"app": "solo"}), "spec": {"volumes": [
                       {"name": "v", "persistentVolumeClaim": {"claimName": "solo-data"}}]}}))
    assert facts["db"] == (STATEFUL, "Service/ml/db: PVC data-db-0 (and 2 more) of StatefulSet ml/db")
    assert facts["files"] == (STATEFUL, "Service/ml/files: PVC shared of Deployment ml/files")
    assert facts["pod"] == (STATEFUL, "Service/ml/pod: PVC solo-data of Pod ml/solo")


def test_stateless_backends_and_services_that_select_nothing_known():
    facts = _facts((SVC, _service("cache", {"app": "cache"})),
                   (DEPLOY, _workload("cache", {"app": "cache"}, volumes=[{"name": "t", "emptyDir": {}},
                                                                          {"name": "e", "ephemeral": {}}])),
                   (SVC, _service("external", None)), (SVC, _service("orphan", {"app": "gone"})),
                   (SVC, _service("elsewhere", {"app": "cache"}, namespace="other")),
                   (SVC, _service("narrow", {"app": "cache", "tier": "gpu"})))
    assert facts == {"cache": (STATELESS, "Service/ml/cache: Deployment ml/cache (no PersistentVolumeClaim)")}
