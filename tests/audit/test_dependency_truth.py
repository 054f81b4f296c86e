"""Dependency truth, both ways (issue 25, item 6): no false blocker, no missed dependency.

Names an object asserts or serves are not dependencies. A cert-manager Certificate (the upstream CRD) for a webhook's Service names and a public host of
cluster-a, an Ingress and a Gateway API route serving that host: recovery reissues the certificate
and serves the hosts from the recovery cluster, so none of these names may be a blocker when
cluster-a is lost. Beside them, a planted dependency on the same domain (a Deployment reading the
Vault of cluster-a) must still be flagged, so the test fails both ways.

Storage and crypto parameters are scanned like any other field: a StorageClass's `kmsKeyId` (a
KMS key ARN of eu-west-1) and a KEDA ScaledObject's trigger metadata (a Prometheus of cluster-a)
are flagged in the scenarios that lose them.
"""

from __future__ import annotations

import os
from typing import Callable

import pytest
import yaml

from dr.cli.exitcodes import Exit
from tests.audit.test_coverage import _audit, dr  # noqa: F401  (dr is a fixture)
from tests.audit.test_planted_references import _blocked, _plan
from tests.harness import write_kubeconfig
from tests.kubernetes.upstream import cluster_with, schemaless_crd, upstream

SERVED_HOST = "models.cluster-a.internal"
WEBHOOK_NAMES = ["kueue-webhook-service.kueue-system.svc", "kueue-webhook-service.kueue-system.svc.cluster.local"]
VAULT_IN_CLUSTER = "https://vault.cluster-a.internal:8200"
KMS_KEY = "arn:aws:kms:eu-west-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab"
PROMETHEUS_IN_CLUSTER = "http://prometheus.cluster-a.internal:9090"
KEDA_CRD = schemaless_crd("keda.sh", "scaledobjects", "ScaledObject", "v1alpha1")
ROUTE_CRD = schemaless_crd("gateway.networking.k8s.io", "httproutes", "HTTPRoute")


def _objects() -> list[dict]:
    def certificate(name: str, namespace: str, names: list[str]) -> dict:
        return {"apiVersion": "cert-manager.io/v1", "kind": "Certificate",
                "metadata": {"name": name, "namespace": namespace},
                "spec": {"secretName": f"{name}-tls", "dnsNames": names, "commonName": names[0],
                         "issuerRef": {"name": "selfsigned", "kind": "Issuer"}}}

    backend = {"service": {"name": "server", "port": {"number": 80}}}
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "kueue-system"}},
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ml"}},
        *({"apiVersion": "cert-manager.io/v1", "kind": "Issuer", "metadata": {"name": "selfsigned", "namespace": ns},
           "spec": {"selfSigned": {}}} for ns in ("kueue-system", "ml")),
        certificate("kueue-webhook", "kueue-system", WEBHOOK_NAMES),
        certificate("models", "ml", [SERVED_HOST]),
        {"apiVersion": "cert-manager.io/v1", "kind": "ClusterIssuer", "metadata": {"name": "letsencrypt"},
         "spec": {"selfSigned": {}}},
        {"apiVersion": "cert-manager.io/v1", "kind": "Certificate", "metadata": {"name": "public", "namespace": "ml"},
         "spec": {"secretName": "public-tls", "dnsNames": [SERVED_HOST], "issuerRef": {"name": "letsencrypt"}}},
        {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": {"name": "models", "namespace": "ml"},
         "spec": {"tls": [{"hosts": [SERVED_HOST], "secretName": "models-tls"}],
                  "rules": [{"host": SERVED_HOST, "http": {"paths": [
                      {"path": "/", "pathType": "Prefix", "backend": backend}]}}]}},
        {"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute", "metadata": {"name": "models", "namespace": "ml"},
         "spec": {"hostnames": [SERVED_HOST], "rules": [{"backendRefs": [{"name": "server", "port": 80}]}]}},
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "server", "namespace": "ml"},
         "spec": {"selector": {"matchLabels": {"app": "server"}}, "template": {
             "metadata": {"labels": {"app": "server"}},
             "spec": {"containers": [{"name": "server", "image": "docker.io/vllm/vllm-openai:v0.6.0",
                                      "env": [{"name": "VAULT_ADDR", "value": VAULT_IN_CLUSTER}]}]}}}},
        {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "encrypted"},
         "provisioner": "ebs.csi.aws.com", "parameters": {"type": "gp3", "encrypted": "true", "kmsKeyId": KMS_KEY}},
        {"apiVersion": "keda.sh/v1alpha1", "kind": "ScaledObject", "metadata": {"name": "server", "namespace": "ml"},
         "spec": {"scaleTargetRef": {"name": "server"}, "triggers": [{"type": "prometheus", "metadata": {
             "serverAddress": PROMETHEUS_IN_CLUSTER, "query": "sum(rate(vllm_requests_total[1m]))",
             "threshold": "50"}}]}},
    ]


@pytest.fixture(scope="module")
def cluster():
    crds = [ROUTE_CRD, KEDA_CRD] + [doc for name in ("issuers", "clusterissuers", "certificates")
                          for doc in upstream(f"cert-manager/crds/cert-manager.io_{name}.yaml")]
    with cluster_with(crds, _objects()) as cluster:
        yield cluster


def backup_and_audit(dr, capsys, tmp_path, cluster, workload_kinds: list[str],  # noqa: F811
                     locations: tuple[dict, ...] = ()) -> tuple[int, dict]:
    """`dr backup` of the emulated cluster with the planted-references plan (these workload_kinds,
    these extra locations), then `dr audit --format json`."""
    kubeconfig = write_kubeconfig(os.path.join(tmp_path, "kubeconfig"), {"source": cluster}, current="source")
    plan_path = _plan(tmp_path, kubeconfig)
    with open(plan_path) as source:
        plan = yaml.safe_load(source)
    plan["sources"][0]["workload_kinds"] = workload_kinds
    plan["locations"] += list(locations)
    with open(plan_path, "w") as out:
        yaml.safe_dump(plan, out, sort_keys=False)
    assert dr(["backup", "--plan", plan_path]) == Exit.OK, capsys.readouterr()
    return _audit(dr, capsys, plan_path)


def cluster_and_audit(objects: Callable[[], list[dict]], workload_kinds: list[str]):
    """The fixtures `cluster` (module-scoped: an emulated cluster holding objects()) and
    `audited` (backup_and_audit of it), for a test module to assign."""
    @pytest.fixture(scope="module")
    def cluster():
        with cluster_with([], objects()) as emulated:
            yield emulated

    @pytest.fixture
    def audited(dr, capsys, tmp_path, cluster):  # noqa: F811
        return backup_and_audit(dr, capsys, tmp_path, cluster, workload_kinds)
    return cluster, audited


@pytest.fixture
def audited(dr, capsys, tmp_path, cluster):  # noqa: F811
    kms = {"name": "kms-eu", "domain": "eu-west-1", "kind": "kms", "prefixes": ["arn:aws:kms:eu-west-1:"]}
    return backup_and_audit(dr, capsys, tmp_path, cluster,
                            ["Deployment", "StatefulSet", "DaemonSet", "Job", "CronJob", "Pod", "Ingress"], (kms,))


def test_asserted_names_are_no_blockers_and_a_real_dependency_still_is(audited):
    code, document = audited
    blocked = _blocked(document)
    assert ("dependency-in-failed-domain", VAULT_IN_CLUSTER) in blocked["cluster-a"], blocked["cluster-a"]
    flagged = [(f["code"], f["reference"]) for f in document["findings"] if f["severity"] in ("blocker", "warning")]
    for name in [SERVED_HOST, *WEBHOOK_NAMES]:
        assert not [f for f in flagged if name.split(".svc")[0] in f[1]], (name, flagged)
    assert code == Exit.BLOCKERS


def test_storage_crypto_and_autoscaler_parameters_are_scanned(audited):
    _, document = audited
    blocked = _blocked(document)
    kms = ("secret-store-in-failed-domain", KMS_KEY)
    assert kms in blocked["eu-west-1"] and kms not in blocked["cluster-a"], blocked
    assert ("dependency-in-failed-domain", PROMETHEUS_IN_CLUSTER) in blocked["cluster-a"], blocked["cluster-a"]
    key = next(f for f in document["findings"] if f["reference"] == KMS_KEY)
    assert key["artifact"].startswith("cluster/kubernetes-objects/storageclasses"), key


def test_an_issuer_ref_left_to_its_default_kind_is_named_with_the_field(audited):
    _, document = audited
    [finding] = [f for f in document["findings"] if f["code"] == "backup-finding"
                 and f["backup"].get("object") == "Certificate/ml/public"]
    assert "spec.issuerRef.kind" in finding["message"] and "ClusterIssuer/letsencrypt" in finding["message"], finding
