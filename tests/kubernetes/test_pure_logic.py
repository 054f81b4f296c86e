"""The exporter's pure parts, without a cluster: dependency scanning on upstream examples, Helm
decoding, ordering rules, remapping, cleaning, the --to syntax."""

from __future__ import annotations

import base64
import copy
import gzip
import json

import pytest

from dr.exporters.kubernetes import helm_releases
from dr.exporters.kubernetes.cleaning import differences, for_create, normalized, strip_runtime
from dr.kits.kubeconfigs import parse_destination
from dr.exporters.kubernetes.ordering import RULES, TypeInfo, levels
from dr.exporters.kubernetes.remapping import Remap, RemapError
from dr.exporters.kubernetes.resources import ResourceType
from dr.exporters.kubernetes.scanning import Scanner
from tests.kubernetes.upstream import helm_release_secret, upstream

EXAMPLES = {
    "lws/examples/leaderworkerset_multi_template.yaml": {"docker.io/nginxinc/nginx-unprivileged:1.27"},
    "lws/examples/lws-volume-claim-templates.yaml": {"docker.io/library/nginx"},
    "kueue/examples/jobs_sample-jobset.yaml": {"docker.io/library/busybox"},
    "kueue/examples/jobs_ray-cluster-sample.yaml": {"docker.io/rayproject/ray:2.9.0"},
    "kueue/examples/jobs_sample-pytorchjob.yaml": {"docker.io/kubeflowkatib/pytorch-mnist-cpu:v1beta1-21320b6"},
    "kueue/examples/jobs_sample-job.yaml": None,  # whatever it names: found, and a Job is a workload
    "kueue/examples/appwrapper_leaderworkerset-sample.yaml": {"registry.k8s.io/nginx-slim:0.27", "docker.io/library/nginx:1.14.2"},
}


@pytest.mark.parametrize("path", sorted(EXAMPLES))
def test_images_are_found_in_any_pod_template_without_knowing_the_kind(path):
    docs = [d for d in upstream(path) if d.get("kind") != "Service"]
    found = set()
    for doc in docs:
        dependencies, workload = Scanner().scan(doc)
        assert workload, f"{doc['kind']} has a pod template"
        images = [d for d in dependencies if d.kind == "image"]
        assert images and all(d.detail.startswith(f"{doc['kind']}/") and ".image" in d.detail for d in images)
        found |= {d.reference for d in images}
    assert found == (EXAMPLES[path] or found)


def test_the_json_path_says_where_the_image_is():
    doc = upstream("kueue/examples/jobs_sample-pytorchjob.yaml")[0]
    details = {d.detail for d in Scanner().scan(doc)[0] if d.kind == "image"}
    assert "PyTorchJob/default/pytorch-simple .spec.pytorchReplicaSpecs.Master.template.spec.containers[0].image" in details


def test_secret_configmap_storage_class_and_webhook_references():
    pod = {"containers": [{"name": "a", "image": "x:1", "envFrom": [{"secretRef": {"name": "s1"}}],
                           "env": [{"name": "K", "valueFrom": {"configMapKeyRef": {"name": "c2", "key": "k"}}}]}],
           "initContainers": [{"name": "i", "image": "init:1"}],
           "imagePullSecrets": [{"name": "pull"}],
           "volumes": [{"name": "v", "configMap": {"name": "c1"}},
                       {"name": "p", "projected": {"sources": [{"secret": {"name": "s2"}}]}}]}
    sts = {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "db", "namespace": "ns"},
           "spec": {"template": {"spec": pod},
                    "volumeClaimTemplates": [{"spec": {"storageClassName": "fast"}}]}}
    refs = {(d.kind, d.reference) for d in Scanner().scan(sts)[0]}
    assert refs == {("image", "docker.io/library/x:1"), ("image", "docker.io/library/init:1"), ("secret", "secret:ns/s1"), ("configmap", "configmap:ns/c2"),
                    ("secret", "secret:ns/pull"), ("configmap", "configmap:ns/c1"), ("secret", "secret:ns/s2"),
                    ("storage-class", "storageclass:fast")}
    webhook = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
               "metadata": {"name": "w"}, "webhooks": [
                   {"name": "a", "clientConfig": {"service": {"name": "svc", "namespace": "sys"}}},
                   {"name": "b", "clientConfig": {"url": "https://hooks.example.com/x"}}]}
    assert {d.reference for d in Scanner().scan(webhook)[0]} == {"svc.sys.svc.cluster.local",
                                                                "https://hooks.example.com/x"}


def test_crd_conversion_webhooks_and_secret_stores():
    crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": {"name": "a.b"},
           "spec": {"conversion": {"strategy": "Webhook", "webhook": {"clientConfig": {
               "service": {"name": "conv", "namespace": "op"}}}}}}
    assert [(d.kind, d.reference) for d in Scanner().scan(crd)[0]] == [("webhook-service", "conv.op.svc.cluster.local")]
    store = {"apiVersion": "external-secrets.io/v1beta1", "kind": "ClusterSecretStore", "metadata": {"name": "vault"},
             "spec": {"provider": {"vault": {"server": "https://vault.internal:8200", "path": "secret"}}}}
    aws = {"apiVersion": "external-secrets.io/v1beta1", "kind": "SecretStore", "metadata": {"name": "a", "namespace": "n"},
           "spec": {"provider": {"aws": {"service": "SecretsManager", "region": "eu-west-1"}}}}
    external = {"apiVersion": "external-secrets.io/v1beta1", "kind": "ExternalSecret",
                "metadata": {"name": "db", "namespace": "n"}, "spec": {"secretStoreRef": {"name": "a", "kind": "SecretStore"}}}
    assert [(d.kind, d.reference) for d in Scanner().scan(store)[0]] == [("secret-store", "https://vault.internal:8200")]
    assert [d.reference for d in Scanner().scan(aws)[0]] == ["https://secretsmanager.eu-west-1.amazonaws.com"]
    assert [d.reference for d in Scanner().scan(external)[0]] == ["secretstore:n/a"]


def test_helm_release_decoding():
    secret = helm_release_secret("team-a", "model-server", 2)
    api_form = dict(secret, data={"release": base64.b64encode(secret["stringData"]["release"].encode()).decode()})
    summary = helm_releases.summarize(api_form)
    assert summary["name"] == "model-server" and summary["revision"] == 2 and summary["status"] == "deployed"
    assert summary["chart"] == {"name": "model-server", "version": "1.4.2", "appVersion": "2.0",
                                "source": "https://charts.example.com/model-server"}
    assert summary["values"]["replicas"] == 3
    [dependency] = helm_releases.dependencies(summary)  # the chart pinned, the release named
    assert (dependency.kind, dependency.reference, dependency.detail) == (
        "helm-chart", "https://charts.example.com/model-server/model-server:1.4.2", "helm release team-a/model-server v2")
    plain = base64.b64encode(base64.b64encode(json.dumps({"name": "x", "version": 1}).encode())).decode()
    assert helm_releases.decode_release({"data": {"release": plain}})["name"] == "x"  # no gzip: older Helm
    with pytest.raises(helm_releases.ReleaseDecodeError):
        helm_releases.decode_release({"data": {"release": base64.b64encode(b"!!").decode()}})
    assert gzip.decompress(base64.b64decode(base64.b64decode(helm_releases.encode_release({"a": 1}))))


def test_a_release_chart_is_pinned_when_its_source_is_a_chart_repository_url():
    pin = helm_releases.pinned_chart
    assert pin("oci://registry.example/charts", "web", "1.0.0") == "oci://registry.example/charts/web:1.0.0"
    assert pin("oci://registry.example/charts/web", "web", "1.0.0") == "oci://registry.example/charts/web:1.0.0"
    assert pin("https://charts.example/stable/", "web", "1.0.0") == "https://charts.example/stable/web:1.0.0"
    assert pin("http://127.0.0.1:8080", "web", "1.0.0") == "http://127.0.0.1:8080/web:1.0.0"
    assert pin("git@github.com:org/charts", "web", "1.0.0") is None  # no chart repository URL
    assert pin("https://charts.example", "web", "") is None
    summary = {"name": "web", "namespace": "a", "revision": 3,
               "chart": {"name": "web", "version": "1.0.0", "source": "git@github.com:org/charts"}}
    [dependency] = helm_releases.dependencies(summary)  # cannot pin: the source, as a repository
    assert (dependency.kind, dependency.reference) == ("helm-chart-repo", "git@github.com:org/charts")
    assert dependency.detail == "helm release a/web v3 chart web-1.0.0"


def _t(qualified: str, kind: str, namespaced: bool = True, **flags) -> TypeInfo:
    plural, _, group = qualified.partition(".")
    return TypeInfo(ResourceType(group, "v1", plural, kind, namespaced), **flags)


def test_ordering_levels_follow_the_rules():
    infos = [_t("customresourcedefinitions.apiextensions.k8s.io", "CustomResourceDefinition", False),
             _t("namespaces", "Namespace", False), _t("secrets", "Secret"), _t("configmaps", "ConfigMap"),
             _t("resourceflavors.kueue.x-k8s.io", "ResourceFlavor", False, custom=True),
             _t("cohorts.kueue.x-k8s.io", "Cohort", False, custom=True),
             _t("clusterqueues.kueue.x-k8s.io", "ClusterQueue", False, custom=True),
             _t("localqueues.kueue.x-k8s.io", "LocalQueue", custom=True),
             _t("certificates.cert-manager.io", "Certificate", custom=True),
             _t("issuers.cert-manager.io", "Issuer", custom=True),
             _t("leaderworkersets.leaderworkerset.x-k8s.io", "LeaderWorkerSet", custom=True, workload=True),
             _t("deployments.apps", "Deployment", workload=True)]
    level_of = {i.rtype.qualified: level.number for level in levels(infos) for i in level.types}
    order = [("customresourcedefinitions.apiextensions.k8s.io", "resourceflavors.kueue.x-k8s.io"),
             ("namespaces", "secrets"), ("resourceflavors.kueue.x-k8s.io", "clusterqueues.kueue.x-k8s.io"),
             ("cohorts.kueue.x-k8s.io", "clusterqueues.kueue.x-k8s.io"),
             ("clusterqueues.kueue.x-k8s.io", "localqueues.kueue.x-k8s.io"),
             ("secrets", "certificates.cert-manager.io"), ("issuers.cert-manager.io", "certificates.cert-manager.io"),
             ("localqueues.kueue.x-k8s.io", "leaderworkersets.leaderworkerset.x-k8s.io"),
             ("configmaps", "deployments.apps")]
    for first, then in order:
        assert level_of[first] < level_of[then], (first, then)
    assert level_of["deployments.apps"] == level_of["leaderworkersets.leaderworkerset.x-k8s.io"]


def test_every_rule_has_a_reason():
    assert all(before and after and len(why) > 15 for before, after, why in RULES)


def test_remap_keys():
    remap = Remap.parse({"namespace:a": "b", "storage-class:gp2": "gp3", "image-registry:old.io/team": "new.io"})
    pvc = {"kind": "PersistentVolumeClaim", "metadata": {"name": "x", "namespace": "a"},
           "spec": {"storageClassName": "gp2"}}
    remap.apply(ResourceType("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", True), pvc)
    assert pvc["metadata"]["namespace"] == "b" and pvc["spec"]["storageClassName"] == "gp3"
    assert remap.image("old.io/team/x:1") == "new.io/x:1" and remap.image("old.io/teamx:1") == "old.io/teamx:1"
    with pytest.raises(RemapError):
        Remap.parse({"namespace:": "x"})


def test_runtime_fields_are_stripped_and_unowned_references_dropped():
    obj = {"apiVersion": "v1", "kind": "Secret", "status": {"x": 1},
           "metadata": {"name": "s", "uid": "u", "resourceVersion": "9", "generation": 2, "managedFields": [{}],
                        "creationTimestamp": "t", "selfLink": "/x", "deletionTimestamp": "t",
                        "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{}"},
                        "ownerReferences": [{"apiVersion": "cert-manager.io/v1", "kind": "Certificate", "uid": "1"},
                                            {"apiVersion": "apps/v1", "kind": "ReplicaSet", "uid": "2"}]}}
    strip_runtime(obj, keep_owner=lambda ref: ref["kind"] == "Certificate")
    assert obj == {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "ownerReferences": [
        {"apiVersion": "cert-manager.io/v1", "kind": "Certificate", "uid": "1"}]}}
    svc_type = ResourceType("", "v1", "services", "Service", True)
    a = {"kind": "Service", "metadata": {"name": "s"}, "spec": {"clusterIP": "10.0.0.1", "ports": [{"port": 80}]}}
    b = {"kind": "Service", "metadata": {"name": "s", "uid": "x"}, "spec": {"clusterIP": "10.9.9.9", "ports": [{"port": 81}]}}
    assert differences(normalized(svc_type, a), normalized(svc_type, b)) == ["spec.ports[0].port"]


def test_destination_syntax(tmp_path):
    config = tmp_path / "kube.yaml"
    config.write_text("{}")
    assert parse_destination("dest", "/src.yaml") == ("/src.yaml", "dest")
    assert parse_destination(f"{config}:dest", None) == (str(config), "dest")
    assert parse_destination(f"{config}:", None) == (str(config), None)
    arn = "arn:aws:eks:us-east-1:111122223333:cluster/train"
    assert parse_destination(arn, None) == (None, arn)
    assert parse_destination(f"{config}:{arn}", None) == (str(config), arn)


def test_ephemeral_volume_storage_classes_inside_pod_templates():
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "n"},
           "spec": {"containers": [{"name": "c", "image": "x"}], "volumes": [
               {"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": {"storageClassName": "local-nvme"}}}}]}}
    assert ("storage-class", "storageclass:local-nvme") in {(d.kind, d.reference) for d in Scanner().scan(pod)[0]}


def test_include_status_keeps_status_in_the_backup_but_never_in_what_is_created():
    rtype = ResourceType("cert-manager.io", "v1", "certificates", "Certificate", True)
    obj = {"apiVersion": "cert-manager.io/v1", "kind": "Certificate", "metadata": {"name": "c"},
           "spec": {"secretName": "s"}, "status": {"conditions": [{"type": "Ready", "status": "True"}]}}
    kept = strip_runtime(dict(obj), include_status=True)
    assert kept["status"] == obj["status"]
    assert "status" not in normalized(rtype, kept)


def test_the_body_to_create_and_the_comparison_form_leave_the_backed_up_object_as_it_was():
    """for_create copies only what stripping changes (no deep copy per restored object): the
    object itself, kept for a webhook's retry, must not lose a field, an annotation or an owner's uid."""
    cert = ResourceType("cert-manager.io", "v1", "certificates", "Certificate", True)
    svc = ResourceType("", "v1", "services", "Service", True)
    owner = {"apiVersion": "v1", "kind": "Secret", "name": "ca", "uid": "u-1"}
    objects = [(cert, {"apiVersion": "cert-manager.io/v1", "kind": "Certificate", "status": {"ready": True},
                       "metadata": {"name": "c", "namespace": "ml", "uid": "x", "resourceVersion": "7",
                                    "ownerReferences": [owner],
                                    "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{}"}},
                       "spec": {"secretName": "s"}}),
               (svc, {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "db", "namespace": "ml"},
                      "spec": {"clusterIP": "10.0.0.7", "ports": [{"port": 5432}]}})]
    for rtype, obj in objects:
        before = copy.deepcopy(obj)
        body, form = for_create(rtype, obj), normalized(rtype, obj)
        assert obj == before, rtype
        assert "status" not in body and "uid" not in body["metadata"] and "clusterIP" not in body["spec"]
        assert all("uid" not in ref for ref in form["metadata"].get("ownerReferences", []))
    assert objects[0][1]["metadata"]["ownerReferences"] == [owner] and owner["uid"] == "u-1"


def test_the_continue_token_is_read_from_the_head_of_a_list_only_when_certain():
    from dr.exporters.kubernetes.requesting import early_token
    assert early_token(b'{"kind":"L","metadata":{"resourceVersion":"5","continue":"abc-_="},"items":[]}') == "abc-_="
    assert early_token(b'{"kind": "L", "metadata": {"resourceVersion": "5"}, "items": []}') == ""
    assert early_token(b'{"items":[{"metadata":{"continue":"x"}}],"metadata":{"continue":"y"}}') is None
    assert early_token(b'{"metadata":{"continue":"a\\\\u0026b"},"items":[]}') is None  # escaped: parse it instead
