"""The upstream CRDs and examples (shared fixtures), and the real-world source cluster built from them.

The files are read from $DR_UPSTREAM_FIXTURES (default ../shared/fixtures/upstream; see
tests/upstream_fixtures.py and scripts/fetch-upstream-fixtures), never copied. A missing file
fails the test: a test that silently skipped would hide a broken checkout.
"""

from __future__ import annotations

import base64
import contextlib
import gzip
import json
import time

import yaml

from tests.harness import EmulatedCluster
from tests.upstream_fixtures import FIXTURES, missing

CANARY = "dr-canary-7f3a9c-never-in-plaintext"
HELM_CANARY = "helm-values-canary-51d0e2"


def upstream(relative: str) -> list[dict]:
    """Every document of one upstream YAML file; fails (never skips) when it is missing."""
    path = FIXTURES / relative
    assert path.is_file(), missing(path)
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml: the CRDs are large
    return [d for d in yaml.load_all(path.read_text(), Loader=loader) if d]


def upstream_crds() -> list[dict]:
    folders = ["kueue/crds", "cert-manager/crds", "lws/crds"]
    crds = []
    for folder in folders:
        files = sorted((FIXTURES / folder).glob("*.yaml"))
        assert files, missing(FIXTURES / folder / "*.yaml")
        crds += [doc for f in files for doc in upstream(str(f.relative_to(FIXTURES)))]
    return crds


def helm_release_secret(namespace: str, name: str, revision: int) -> dict:
    """A release Secret exactly as Helm writes it: JSON, gzip, base64 (the API adds one more)."""
    release = {
        "name": name, "namespace": namespace, "version": revision,
        "info": {"status": "deployed", "description": "Install complete"},
        "chart": {"metadata": {"name": "model-server", "version": "1.4.2", "appVersion": "2.0",
                               "sources": ["https://charts.example.com/model-server"]},
                  "templates": [], "values": {"replicas": 1}},
        "config": {"replicas": 3, "auth": {"password": HELM_CANARY}},
        "manifest": "---\n# Source: model-server/templates/deployment.yaml\n",
    }
    helm_string = base64.b64encode(gzip.compress(json.dumps(release).encode())).decode()
    return {"apiVersion": "v1", "kind": "Secret", "type": "helm.sh/release.v1",
            "metadata": {"name": f"sh.helm.release.v1.{name}.v{revision}", "namespace": namespace,
                         "labels": {"name": name, "owner": "helm", "status": "deployed",
                                    "version": str(revision)}},
            "stringData": {"release": helm_string}}


def _ns(name: str) -> dict:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


def _in(namespace: str, docs: list[dict]) -> list[dict]:
    for doc in docs:
        doc.setdefault("metadata", {}).setdefault("namespace", namespace)
    return docs


def platform_objects() -> list[dict]:
    """Built-in configuration of a small AI platform (namespaces, config, secrets, RBAC ...)."""
    pod = {"serviceAccountName": "trainer", "imagePullSecrets": [{"name": "regcred"}],
           "containers": [{"name": "server", "image": "registry.internal:5000/ml/server:1.2",
                           "envFrom": [{"configMapRef": {"name": "settings"}}],
                           "env": [{"name": "PW", "valueFrom": {"secretKeyRef": {"name": "db", "key": "pw"}}}]}],
           "volumes": [{"name": "tls", "secret": {"secretName": "web-tls"}}]}
    return [
        _ns("team-a"), _ns("team-b"),
        {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "default"},
         "provisioner": "ebs.csi.aws.com"},
        {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "training"}, "value": 1000},
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings", "namespace": "team-a"},
         "data": {"mode": "train"}},
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "db", "namespace": "team-a"},
         "stringData": {"pw": CANARY}},
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "regcred", "namespace": "team-a"},
         "type": "kubernetes.io/dockerconfigjson", "stringData": {".dockerconfigjson": '{"auths": {}}'}},
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "trainer", "namespace": "team-a"},
         "imagePullSecrets": [{"name": "regcred"}]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "reader", "namespace": "team-a"},
         "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
         "metadata": {"name": "reader", "namespace": "team-a"},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "reader"},
         "subjects": [{"kind": "ServiceAccount", "name": "trainer", "namespace": "team-a"}]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "queue-viewer"},
         "rules": [{"apiGroups": ["kueue.x-k8s.io"], "resources": ["*"], "verbs": ["get", "list"]}]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": "queue-viewer"},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "queue-viewer"},
         "subjects": [{"kind": "ServiceAccount", "name": "trainer", "namespace": "team-a"}]},
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "server", "namespace": "team-a"},
         "spec": {"selector": {"matchLabels": {"app": "server"}},
                  "template": {"metadata": {"labels": {"app": "server"}}, "spec": pod}}},
        {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "nightly", "namespace": "team-b"},
         "spec": {"schedule": "0 3 * * *", "jobTemplate": {"spec": {"template": {"spec": {
             "restartPolicy": "Never", "initContainers": [{"name": "init", "image": "busybox:1.36"}],
             "containers": [{"name": "eval", "image": "ghcr.io/acme/eval@sha256:" + "a" * 64}]}}}}}},
        {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
         "metadata": {"name": "kueue-validating"},
         "webhooks": [{"name": "vclusterqueue.kb.io", "admissionReviewVersions": ["v1"], "sideEffects": "None",
                       "clientConfig": {"service": {"name": "kueue-webhook-service", "namespace": "kueue-system",
                                                    "path": "/validate"}}}]},
        helm_release_secret("team-a", "model-server", 1),
        helm_release_secret("team-a", "model-server", 2),
    ]


def kueue_objects() -> list[dict]:
    docs = upstream("kueue/examples/provisioning_provisioning-setup.yaml")
    docs += upstream("kueue/examples/admin_minimal-cq.yaml")  # names AdmissionCheck sample-prov-2: missing
    docs += [
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Cohort", "metadata": {"name": "research"}},
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "WorkloadPriorityClass", "metadata": {"name": "urgent"},
         "value": 10000},
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Topology", "metadata": {"name": "dc"},
         "spec": {"levels": [{"nodeLabel": "topology.kubernetes.io/zone"}]}},
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "spot-queue"},
         "spec": {"namespaceSelector": {}, "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
             {"name": "spot-missing", "resources": [{"name": "cpu", "nominalQuota": 4}]}]}]}},
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload", "metadata": {"name": "job-x", "namespace": "default"},
         "spec": {"queueName": "user-queue", "podSets": [{"name": "main", "count": 1, "template": {
             "spec": {"containers": [{"name": "c", "image": "busybox"}]}}}]}},
    ]
    return docs


def cert_manager_objects(certificate_uid: str | None = None) -> list[dict]:
    tls = {"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
           "metadata": {"name": "web-tls", "namespace": "team-a",
                        "annotations": {"cert-manager.io/certificate-name": "web"}},
           "stringData": {"tls.crt": "CERT", "tls.key": CANARY + "-key"}}
    if certificate_uid:
        tls["metadata"]["ownerReferences"] = [{"apiVersion": "cert-manager.io/v1", "kind": "Certificate",
                                               "name": "web", "uid": certificate_uid, "controller": True,
                                               "blockOwnerDeletion": True}]
    return [tls]


def cert_manager_resources() -> list[dict]:
    return [
        {"apiVersion": "cert-manager.io/v1", "kind": "Issuer", "metadata": {"name": "selfsigned", "namespace": "team-a"},
         "spec": {"selfSigned": {}}},
        {"apiVersion": "cert-manager.io/v1", "kind": "ClusterIssuer", "metadata": {"name": "letsencrypt"},
         "spec": {"acme": {"server": "https://acme-v02.api.letsencrypt.org/directory", "email": "ops@example.com",
                           "privateKeySecretRef": {"name": "letsencrypt-account"},
                           "solvers": [{"http01": {"ingress": {"ingressClassName": "nginx"}}}]}}},
        {"apiVersion": "cert-manager.io/v1", "kind": "Certificate", "metadata": {"name": "web", "namespace": "team-a"},
         "spec": {"secretName": "web-tls", "dnsNames": ["web.example.com"],
                  "issuerRef": {"name": "selfsigned", "kind": "Issuer"}}},
        {"apiVersion": "cert-manager.io/v1", "kind": "CertificateRequest",
         "metadata": {"name": "web-1", "namespace": "team-a"},
         "spec": {"request": "LS0tLS1CRUdJTg==", "issuerRef": {"name": "selfsigned"}}},
        {"apiVersion": "acme.cert-manager.io/v1", "kind": "Order", "metadata": {"name": "web-1-123", "namespace": "team-a"},
         "spec": {"request": "LS0tLS1CRUdJTg==", "issuerRef": {"name": "letsencrypt"}}},
        {"apiVersion": "acme.cert-manager.io/v1", "kind": "Challenge",
         "metadata": {"name": "web-1-123-0", "namespace": "team-a"},
         "spec": {"url": "https://acme.example/chal/1", "type": "HTTP-01", "token": "t", "key": "k",
                  "dnsName": "web.example.com", "authorizationURL": "https://acme.example/authz/1",
                  "issuerRef": {"name": "letsencrypt"}, "solver": {}}},
    ]


def lws_objects() -> list[dict]:
    docs = upstream("lws/examples/leaderworkerset_v1_leaderworkerset.yaml")
    docs += upstream("lws/examples/leaderworkerset_multi_template.yaml")
    docs += upstream("lws/examples/lws-volume-claim-templates.yaml")
    return _in("team-b", docs)


def wait_established(cluster, crds: list[dict], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    for crd in crds:
        while True:
            live = cluster.get_object("apiextensions.k8s.io/v1", "CustomResourceDefinition", crd["metadata"]["name"])
            conditions = ((live or {}).get("status") or {}).get("conditions") or []
            if any(c["type"] == "Established" and c["status"] == "True" for c in conditions):
                break
            assert time.monotonic() < deadline, f"CRD {crd['metadata']['name']} never Established"
            time.sleep(0.02)


def populate(cluster) -> None:
    """The real-world source: upstream CRDs and examples, plus platform configuration."""
    crds = upstream_crds()
    cluster.create_objects(crds)
    wait_established(cluster, crds)
    cluster.create_objects(platform_objects())
    cluster.create_objects(kueue_objects())
    created = cluster.create_objects(cert_manager_resources())
    certificate = next(o for o in created if o["kind"] == "Certificate")
    cluster.create_objects(cert_manager_objects(certificate["metadata"]["uid"]))
    cluster.create_objects(lws_objects())


def schemaless_crd(group: str, plural: str, kind: str, version: str = "v1") -> dict:
    """A namespaced CRD that keeps every field: for kinds whose upstream CRD the fixtures lack."""
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"{plural}.{group}"},
            "spec": {"group": group, "scope": "Namespaced",
                     "names": {"plural": plural, "singular": kind.lower(), "kind": kind},
                     "versions": [{"name": version, "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                         "type": "object", "x-kubernetes-preserve-unknown-fields": True}}}]}}


@contextlib.contextmanager
def cluster_with(crds: list[dict], objects: list[dict], name: str = "source"):
    """A started emulated cluster holding `crds` (Established) and then `objects`; stopped after."""
    cluster = EmulatedCluster(name=name).start()
    try:
        cluster.create_objects(crds)
        wait_established(cluster, crds)
        cluster.create_objects(objects)
        yield cluster
    finally:
        cluster.stop()
