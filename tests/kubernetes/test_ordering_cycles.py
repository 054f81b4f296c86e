"""Restore order of resource types when rules form a cycle (dr.model.levelling's policy)."""

from __future__ import annotations

from dr.exporters.kubernetes import ordering
from dr.exporters.kubernetes.admission import refused_by_webhook
from dr.exporters.kubernetes.ordering import TypeInfo, levels
from dr.exporters.kubernetes.referencing import derived
from dr.exporters.kubernetes.requesting import KubeError
from dr.exporters.kubernetes.resources import ResourceType
from dr.model.artifacts import Artifact, Dependency, Sensitivity


def _t(plural: str) -> TypeInfo:
    return TypeInfo(ResourceType("", "v1", plural, plural.title(), True))


def test_types_in_a_cycle_share_a_level_after_the_rest_and_say_so(monkeypatch):
    monkeypatch.setattr(ordering, "RULES", [("secrets", "configmaps", "one way"), ("configmaps", "secrets", "back"),
                                            ("configmaps", "pods", "pods mount them")])
    plan = levels([_t("pods"), _t("secrets"), _t("configmaps"), _t("namespaces")])
    assert [[i.rtype.qualified for i in level.types] for level in plan] == [
        ["namespaces"], ["configmaps", "secrets"], ["pods"]]
    assert plan[1].after["secrets"][0] == ("restored together with configmaps: the ordering rules form a cycle "
                                           "between them")
    assert plan[1].after["secrets"][1] == "after configmaps: back"
    assert plan[2].after["pods"] == ["after configmaps: pods mount them"]


def _custom(qualified: str, kind: str, workload: bool = False) -> TypeInfo:
    plural, _, group = qualified.partition(".")
    return TypeInfo(ResourceType(group, "v1", plural, kind, True), custom=True, workload=workload)


def test_a_reference_outranks_the_configuration_before_workloads_hint():
    jobs = _custom("trainjobs.trainer.kubeflow.org", "TrainJob")  # no pod template: configuration
    runtimes = _custom("clustertrainingruntimes.trainer.kubeflow.org", "ClusterTrainingRuntime", workload=True)
    plan = levels([jobs, runtimes, _t("namespaces")])
    level_of = {i.rtype.qualified: level.number for level in plan for i in level.types}
    assert level_of[runtimes.rtype.qualified] < level_of[jobs.rtype.qualified]
    assert not any(level.warnings for level in plan)  # a hint set aside is no cycle worth a warning
    assert any("Kubeflow Trainer's validating webhook" in why for why in plan[-1].after[jobs.rtype.qualified])


def test_a_cycle_of_references_is_broken_with_a_warning_that_names_it():
    a, b = _custom("widgets.example.com", "Widget"), _custom("gadgets.example.com", "Gadget")
    derived = {"widgets.example.com": {"gadgets.example.com": "Widget/ns/w .spec.gadget names gadget:ns/g"},
               "gadgets.example.com": {"widgets.example.com": "Gadget/ns/g .spec.widget names widget:ns/w"}}
    plan = levels([a, b, _t("namespaces")], derived)
    assert [[i.rtype.qualified for i in level.types] for level in plan] == [
        ["namespaces"], ["gadgets.example.com", "widgets.example.com"]]
    [warning] = [w for level in plan for w in level.warnings]
    assert "gadgets.example.com, widgets.example.com form a cycle" in warning
    assert "Widget/ns/w .spec.gadget names gadget:ns/g" in warning and "tried again" in warning
    assert plan[1].after["widgets.example.com"] == ["after namespaces: a namespaced object needs its namespace"]


def test_references_the_scan_recorded_order_their_provider_first():
    def artifact(plural: str, kind: str, provides: list[str], dependencies: list[Dependency]) -> Artifact:
        meta = {**ResourceType("", "v1", plural, kind, True).to_meta(), "provides": provides}
        return Artifact("cluster", "kubernetes", "kubernetes-objects", f"{plural}/ml", 0, Sensitivity.INTERNAL,
                        meta=meta, dependencies=dependencies)

    service = artifact("services", "Service", ["service:ml/db", "db.ml.svc.cluster.local"], [])
    config = artifact("configmaps", "ConfigMap", ["configmap:ml/app"], [
        Dependency("service", "db.ml.svc.cluster.local", "ConfigMap/ml/app .data.url"),
        Dependency("http-endpoint", "https://example.com", "ConfigMap/ml/app .data.site")])
    hooks = artifact("validatingwebhookconfigurations", "ValidatingWebhookConfiguration", [], [
        Dependency("webhook-service", "db.ml.svc.cluster.local", "ValidatingWebhookConfiguration/v .webhooks[0]")])
    assert derived([service, config, hooks]) == {
        "configmaps": {"services": "ConfigMap/ml/app .data.url names db.ml.svc.cluster.local"}}


def test_only_a_webhook_refusal_is_tried_again():
    denied = 'create trainjobs/ml/a: 422 admission webhook "v.kb.io" denied the request: runtime not found'
    assert refused_by_webhook(KubeError(422, "Invalid", denied))
    assert refused_by_webhook(KubeError(403, "Forbidden", denied.replace("422", "403")))
    assert not refused_by_webhook(KubeError(403, "Forbidden", "create x: 403 namespace ml is being terminated"))
    assert not refused_by_webhook(KubeError(500, "InternalError", denied.replace("422", "500")))
