"""Issue 10, end to end: dependencies the audit used to miss, planted in an emulated cluster,
backed up with `dr backup` (default kubernetes options) and judged by `dr audit` for a cluster
loss and a region loss.

Planted on cluster-a or its region (the audit must flag each):
  - an Argo CD Application whose repoURL is the cluster's own Git server (Service DNS);
  - a CronJob whose env names a bucket in eu-west-1 (survives a cluster loss, not a region loss);
  - a cert-manager ClusterIssuer signing with a Vault inside cluster-a (the upstream CRD);
  - a Deployment on an image only in cluster-a's registry, under the default options.
  - a cert-manager Issuer whose ACME server runs in cluster-a, and a Certificate naming a
    ClusterIssuer the backup lacks (a backup-finding in the audit);
  - dr's own backup CronJob reading the DR target's credentials from a Secret in cluster-a, with
    no credentials_location in the plan: circular (the snapshot holds the only known copy).
Independent (must not be flagged): a Docker Hub short name (`busybox`), a GitHub remote.
"""

from __future__ import annotations

import os

import pytest
import yaml

from dr.audit import run_audit, scenarios_for
from dr.cli.exitcodes import Exit
from dr.model.plan_loading import load_plan
from dr.repository.encryption import generate_identity
from dr.repository.repositories import Repository
from dr.repository.stores.local import LocalStore
from tests.audit.test_coverage import _audit, dr  # noqa: F401  (dr is a fixture)
from tests.harness import EmulatedCluster, write_kubeconfig
from tests.kubernetes.upstream import upstream, wait_established

GIT_IN_CLUSTER = "http://gitea.git.svc.cluster.local:3000/platform/config.git"
BUCKET_IN_REGION = "s3://ml-data-eu-west-1/nightly/"
VAULT_IN_CLUSTER = "https://vault.cluster-a.internal:8200"
IMAGE_IN_CLUSTER = "registry.cluster-a.internal:5000/ml/server:1.2"
GITHUB = "https://github.com/acme/platform.git"
DR_IMAGE = "docker.io/acme/dr:1"
ACME_IN_CLUSTER = "https://step-ca.pki.svc.cluster.local/acme/acme/directory"

ARGO_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "applications.argoproj.io"},
    "spec": {"group": "argoproj.io", "scope": "Namespaced",
             "names": {"plural": "applications", "singular": "application", "kind": "Application"},
             "versions": [{"name": "v1alpha1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                 "type": "object", "x-kubernetes-preserve-unknown-fields": True}}}]}}


def _objects() -> list[dict]:
    def app(name: str, url: str) -> dict:
        return {"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
                "metadata": {"name": name, "namespace": "argocd"},
                "spec": {"project": "default", "source": {"repoURL": url, "path": "ml"},
                         "destination": {"namespace": "ml", "name": "in-cluster"}}}
    pod = {"containers": [{"name": "sync", "image": "busybox",
                           "env": [{"name": "DATA", "value": BUCKET_IN_REGION}]}], "restartPolicy": "Never"}
    dr_pod = {"containers": [{"name": "dr", "image": DR_IMAGE, "args": ["backup", "--plan", "/plan/plan.yaml"],
                              "envFrom": [{"secretRef": {"name": "dr-bucket-writer"}}]}],
              "restartPolicy": "Never"}
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "argocd"}},
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ml"}},
        app("platform", GIT_IN_CLUSTER), app("public", GITHUB),
        {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "nightly", "namespace": "ml"},
         "spec": {"schedule": "0 3 * * *", "jobTemplate": {"spec": {"template": {"spec": pod}}}}},
        {"apiVersion": "cert-manager.io/v1", "kind": "ClusterIssuer", "metadata": {"name": "vault"},
         "spec": {"vault": {"server": VAULT_IN_CLUSTER, "path": "pki/sign/ml",
                            "auth": {"tokenSecretRef": {"name": "vault-token", "key": "token"}}}}},
        {"apiVersion": "cert-manager.io/v1", "kind": "Issuer", "metadata": {"name": "step-ca", "namespace": "ml"},
         "spec": {"acme": {"server": ACME_IN_CLUSTER, "privateKeySecretRef": {"name": "step-account"},
                           "solvers": [{"http01": {"ingress": {}}}]}}},
        {"apiVersion": "cert-manager.io/v1", "kind": "Certificate", "metadata": {"name": "web", "namespace": "ml"},
         "spec": {"secretName": "web-tls", "dnsNames": ["web.ml.svc"],
                  "issuerRef": {"name": "gone", "kind": "ClusterIssuer"}}},
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "dr-system"}},
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "dr-bucket-writer", "namespace": "dr-system"},
         "stringData": {"AWS_ACCESS_KEY_ID": "x", "AWS_SECRET_ACCESS_KEY": "y"}},
        {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "dr-backup", "namespace": "dr-system"},
         "spec": {"schedule": "0 * * * *", "jobTemplate": {"spec": {"template": {"spec": dr_pod}}}}},
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "server", "namespace": "ml"},
         "spec": {"selector": {"matchLabels": {"app": "server"}}, "template": {
             "metadata": {"labels": {"app": "server"}},
             "spec": {"containers": [{"name": "server", "image": IMAGE_IN_CLUSTER}]}}}},
    ]


def _plan(root, kubeconfig: str) -> str:
    data = {
        "version": 1, "name": "platform",
        "failure_domains": [
            {"name": "cloud", "kind": "provider", "children": [
                {"name": "eu-west-1", "kind": "region", "children": [{"name": "cluster-a", "kind": "cluster"}]},
                {"name": "us-east-1", "kind": "region"}]},
            {"name": "github", "kind": "provider"}, {"name": "dockerhub", "kind": "provider"}],
        "locations": [
            {"name": "data-eu", "domain": "eu-west-1", "kind": "bucket", "prefixes": ["s3://ml-data-eu-west-1/"]},
            {"name": "github", "domain": "github", "kind": "git", "hosts": ["github.com"]},
            {"name": "hub", "domain": "dockerhub", "kind": "registry", "hosts": ["docker.io"]},
            {"name": "dr-us", "domain": "us-east-1", "kind": "secret-store", "prefixes": [str(root)]}],
        "placement_rules": [
            {"match": "*.svc.cluster.local", "domain": "cluster-a", "reason": "in-cluster service DNS"},
            {"match": "*.cluster-a.internal", "domain": "cluster-a", "reason": "cluster-a's own hosts"}],
        "protects_against": ["cluster-a", "eu-west-1"],
        "encryption": {"recipients": [generate_identity()[1]], "key_location": str(root / "age-identity")},
        "targets": [{"name": "dr", "url": str(root / "repo"), "domain": "us-east-1",
                     "credentials_location": str(root)}],
        "dr_image": DR_IMAGE,
        "sources": [{"name": "cluster", "type": "kubernetes", "kubeconfig": kubeconfig, "context": "source",
                     "rpo": "1h"}],
    }
    path = root / "plan.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return str(path)


@pytest.fixture(scope="module")
def cluster():
    cluster = EmulatedCluster(name="source").start()
    try:
        crds = [ARGO_CRD] + [doc for name in ("clusterissuers", "issuers", "certificates")
                             for doc in upstream(f"cert-manager/crds/cert-manager.io_{name}.yaml")]
        cluster.create_objects(crds)
        wait_established(cluster, crds)
        cluster.create_objects(_objects())
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def audited(dr, capsys, tmp_path, cluster):  # noqa: F811
    kubeconfig = write_kubeconfig(os.path.join(tmp_path, "kubeconfig"), {"source": cluster}, current="source")
    plan = _plan(tmp_path, kubeconfig)
    assert dr(["backup", "--plan", plan]) == Exit.OK, capsys.readouterr()
    code, document = _audit(dr, capsys, plan)
    return code, document


def _blocked(document: dict) -> dict[str, set[tuple[str, str]]]:
    """scenario -> {(code, reference)} of its blockers."""
    out: dict[str, set[tuple[str, str]]] = {}
    for finding in document["findings"]:
        if finding["severity"] == "blocker" and finding["scenario"]:
            out.setdefault(finding["scenario"], set()).add((finding["code"], finding["reference"]))
    return out


def test_each_planted_dependency_is_flagged_in_the_scenario_that_loses_it(audited):
    code, document = audited
    blocked = _blocked(document)
    in_cluster = {("dependency-in-failed-domain", GIT_IN_CLUSTER), ("dependency-in-failed-domain", ACME_IN_CLUSTER),
                  ("secret-store-in-failed-domain", VAULT_IN_CLUSTER),
                  ("image-in-failed-domain", IMAGE_IN_CLUSTER)}
    assert in_cluster <= blocked["cluster-a"], blocked["cluster-a"]
    assert ("dependency-in-failed-domain", BUCKET_IN_REGION) not in blocked["cluster-a"]  # the region survives
    assert in_cluster | {("dependency-in-failed-domain", BUCKET_IN_REGION)} <= blocked["eu-west-1"]
    assert code == Exit.BLOCKERS


def test_independent_references_are_not_flagged(audited):
    _, document = audited
    flagged = {f["reference"] for f in document["findings"] if f["severity"] in ("blocker", "warning")}
    assert GITHUB not in flagged
    assert not any("busybox" in reference for reference in flagged), flagged


def test_the_findings_name_the_object_and_field_that_need_it(audited):
    _, document = audited
    vault = next(f for f in document["findings"] if f["reference"] == VAULT_IN_CLUSTER)
    assert vault["kind"] == "secret-store" and vault["artifact"].startswith("cluster/kubernetes-objects/clusterissuers")
    git = next(f for f in document["findings"] if f["reference"] == GIT_IN_CLUSTER)
    assert git["kind"] == "git-remote"


def test_credentials_only_in_the_cluster_are_circular_for_a_remote_target(audited, tmp_path):
    """The same snapshot, audited with a plan whose (remote) target declares no
    credentials_location: dr's CronJob reads them from a Secret in the cluster it backs up."""
    plan = yaml.safe_load((tmp_path / "plan.yaml").read_text())
    plan["targets"] = [{"name": "dr", "url": "s3://dr-us/platform", "domain": "us-east-1"}]
    (tmp_path / "remote.yaml").write_text(yaml.safe_dump(plan))
    loaded = load_plan(str(tmp_path / "remote.yaml"))
    report = run_audit(loaded, Repository(LocalStore(str(tmp_path / "repo"))), loaded.spec.targets[0],
                       scenarios_for(loaded))
    [circular] = [f for f in report.findings if f.code == "credentials-circular"]
    assert circular.reference == "secret:dr-system/dr-bucket-writer" and circular.severity == "blocker"
    assert circular.examples == ["CronJob/dr-system/dr-backup"]
    _, document = audited  # the plan as written keeps them outside the cluster: not circular
    assert not [f for f in document["findings"] if f["code"] == "credentials-circular"]


def test_a_certificate_whose_issuer_the_backup_lacks_is_in_the_audit(audited):
    _, document = audited
    found = [f["backup"] for f in document["findings"] if f["code"] == "backup-finding"]
    assert {"source": "cluster", "code": "cert-manager-issuer-missing", "severity": "warning",
            "object": "Certificate/ml/web"} in found
