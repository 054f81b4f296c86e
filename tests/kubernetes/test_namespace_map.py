"""--namespace-map rewrites every namespace reference it safely can, and notes the rest (issue 10)."""

from __future__ import annotations

import pytest

from dr.contract import OutcomeStatus
from dr.exporters.kubernetes.remapping import Remap
from dr.exporters.kubernetes.resources import ResourceType
from tests.kubernetes.conftest import failures

KQ = "kueue.x-k8s.io/v1beta2"
MAP = {"namespace:team-a": "team-b"}
CQ_TYPE = ResourceType("kueue.x-k8s.io", "v1beta2", "clusterqueues", "ClusterQueue", False)
DEPLOYMENT_TYPE = ResourceType("apps", "v1", "deployments", "Deployment", True)
CERT_TYPE = ResourceType("cert-manager.io", "v1", "certificates", "Certificate", True)
CM_TYPE = ResourceType("", "v1", "configmaps", "ConfigMap", True)


def _cluster_queue() -> dict:
    return {"apiVersion": KQ, "kind": "ClusterQueue", "metadata": {"name": "team-a-cq"},
            "spec": {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "team-a"},
                                           "matchExpressions": [{"key": "kubernetes.io/metadata.name",
                                                                 "operator": "In", "values": ["team-a", "team-c"]},
                                                                {"key": "tier", "operator": "In",
                                                                 "values": ["team-a"]}]},
                     "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
                         {"name": "default-flavor", "resources": [{"name": "cpu", "nominalQuota": 4}]}]}]}}


def _deployment() -> dict:
    container = {"name": "web", "image": "busybox", "args": ["--db=postgres.team-a.svc.cluster.local:5432"],
                 "command": ["serve"],
                 "env": [{"name": "CACHE", "value": "http://redis.team-a.svc:6379/0"},
                         {"name": "OTHER", "value": "http://redis.team-c.svc:6379"},
                         {"name": "PLAIN", "value": "team-a"}]}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "team-a"},
            "spec": {"selector": {"matchLabels": {"app": "web"}},
                     "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [container]}}}}


def _certificate() -> dict:
    return {"apiVersion": "cert-manager.io/v1", "kind": "Certificate", "metadata": {"name": "svc", "namespace": "team-a"},
            "spec": {"secretName": "svc-tls", "commonName": "web.team-a.svc",
                     "dnsNames": ["web.team-a.svc", "*.team-a.svc.cluster.local", "web.example.com",
                                  "api.team-ab.svc"],
                     "issuerRef": {"name": "selfsigned", "kind": "Issuer"}}}


def _config_map() -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "endpoints", "namespace": "team-a",
                                                                  "annotations": {"note": "see redis.team-a.svc"}},
            "data": {"api": "http://api.team-a.svc:8080", "unrelated": "team-a"}}


def _apply(rtype: ResourceType, obj: dict) -> tuple[dict, list[str]]:
    notes: list[str] = []
    return Remap.parse(MAP).apply(rtype, obj, notes), notes


def test_selectors_on_the_namespace_name_label_follow_the_map():
    cq, notes = _apply(CQ_TYPE, _cluster_queue())
    selector = cq["spec"]["namespaceSelector"]
    assert selector["matchLabels"] == {"kubernetes.io/metadata.name": "team-b"}
    assert selector["matchExpressions"][0]["values"] == ["team-b", "team-c"]
    assert selector["matchExpressions"][1]["values"] == ["team-a"]  # another label: not a namespace name
    assert notes == []


def test_service_dns_names_in_env_args_and_certificates_follow_the_map():
    deployment, notes = _apply(DEPLOYMENT_TYPE, _deployment())
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    assert container["args"] == ["--db=postgres.team-b.svc.cluster.local:5432"]
    assert [e["value"] for e in container["env"]] == ["http://redis.team-b.svc:6379/0", "http://redis.team-c.svc:6379",
                                                      "team-a"]
    assert notes == [] and deployment["metadata"]["namespace"] == "team-b"
    certificate, notes = _apply(CERT_TYPE, _certificate())
    assert certificate["spec"]["dnsNames"] == ["web.team-b.svc", "*.team-b.svc.cluster.local", "web.example.com",
                                               "api.team-ab.svc"]
    assert certificate["spec"]["commonName"] == "web.team-b.svc" and notes == []


def test_what_it_cannot_rewrite_safely_is_noted_per_place():
    config_map, notes = _apply(CM_TYPE, _config_map())
    assert config_map["data"]["api"] == "http://api.team-a.svc:8080"  # left as it was
    assert sorted(notes) == [".data.api names a Service in namespace 'team-a'",
                             ".metadata.annotations.note names a Service in namespace 'team-a'"]
    webhook = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
               "metadata": {"name": "w"}, "webhooks": [{"name": "w.example.com", "clientConfig": {
                   "service": {"name": "hook", "namespace": "team-a"}}}]}
    rtype = ResourceType("admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations",
                         "ValidatingWebhookConfiguration", False)
    _, notes = _apply(rtype, webhook)
    assert notes == [".webhooks[0].clientConfig.service.namespace names namespace 'team-a'"]


@pytest.fixture(scope="module")
def planted(source):
    source.create_objects([_cluster_queue(), _deployment(), _config_map(),
                           {"apiVersion": KQ, "kind": "LocalQueue", "metadata": {"name": "lq", "namespace": "team-a"},
                            "spec": {"clusterQueue": "team-a-cq"}}])
    return source


def test_a_mapped_restore_keeps_kueue_admitting_the_new_namespace(planted, pipeline, dest):
    backup = pipeline.backup()
    outcomes = {o.item: o for o in pipeline.restore(backup.artifacts, remap=MAP)}
    assert failures(list(outcomes.values())) == []
    cq = dest.get_object(KQ, "ClusterQueue", "team-a-cq")
    assert cq["spec"]["namespaceSelector"]["matchLabels"] == {"kubernetes.io/metadata.name": "team-b"}
    namespace = dest.get_object("v1", "Namespace", "team-b")
    assert namespace["metadata"]["labels"]["kubernetes.io/metadata.name"] == "team-b"  # the selector matches it
    assert dest.get_object(KQ, "LocalQueue", "lq", "team-b")["spec"]["clusterQueue"] == "team-a-cq"
    env = dest.get_object("apps/v1", "Deployment", "web", "team-b")["spec"]["template"]["spec"]["containers"][0]["env"]
    assert env[0]["value"] == "http://redis.team-b.svc:6379/0"
    noted = outcomes["configmaps/team-b/endpoints"]
    assert noted.status == OutcomeStatus.RESTORED and "--namespace-map left .data.api" in noted.reason
    dry = {o.item: o for o in pipeline.restore(backup.artifacts, remap=MAP, dry_run=True)}
    assert "--namespace-map left" in dry["configmaps/team-b/endpoints"].reason
    again = pipeline.restore(backup.artifacts, remap=MAP)
    assert {o.status for o in again} <= {OutcomeStatus.UNCHANGED, OutcomeStatus.SKIPPED}, failures(again)
    # what dr drill compares: every batch, remapped as the restore sent it, equals the destination's
    from dr.contract import ExportContext, RestoreRequest
    from dr.exporters.kubernetes import KubernetesExporter
    from dr.repository.reading import ArtifactReader
    exporter = KubernetesExporter(ExportContext("cluster", pipeline.options(), base_dir="/"))
    reader = ArtifactReader(pipeline.repo, pipeline.identities)
    for remap, equal in ((MAP, True), ({}, False)):  # unmapped: team-a's objects are not where the backup put them
        found = list(exporter.restored_content(backup.artifacts, reader,
                                               RestoreRequest(to=f"{pipeline.kubeconfig}:dest", remap=remap)))
        assert found and all(c.restored == c.backed_up for c in found) == equal
