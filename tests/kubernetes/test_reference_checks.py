"""Kueue and cert-manager references checked at backup time: upstream examples and hand-written objects."""

from __future__ import annotations

from dr.exporters.kubernetes.certmanager import cert_manager_check
from dr.exporters.kubernetes.kueue import kueue_check
from dr.exporters.kubernetes.refchecks import combined
from dr.exporters.kubernetes.resources import ResourceType
from tests.kubernetes.upstream import upstream

KQ, CM = "kueue.x-k8s.io", "cert-manager.io"
TYPES = {
    "ClusterQueue": ResourceType(KQ, "v1beta2", "clusterqueues", "ClusterQueue", False),
    "LocalQueue": ResourceType(KQ, "v1beta2", "localqueues", "LocalQueue", True),
    "ResourceFlavor": ResourceType(KQ, "v1beta2", "resourceflavors", "ResourceFlavor", False),
    "AdmissionCheck": ResourceType(KQ, "v1beta2", "admissionchecks", "AdmissionCheck", False),
    "ProvisioningRequestConfig": ResourceType(KQ, "v1beta2", "provisioningrequestconfigs",
                                              "ProvisioningRequestConfig", False),
    "MultiKueueConfig": ResourceType(KQ, "v1beta2", "multikueueconfigs", "MultiKueueConfig", False),
    "MultiKueueCluster": ResourceType(KQ, "v1beta2", "multikueueclusters", "MultiKueueCluster", False),
    "Topology": ResourceType(KQ, "v1beta2", "topologies", "Topology", False),
    "Cohort": ResourceType(KQ, "v1beta2", "cohorts", "Cohort", False),
    "Secret": ResourceType("", "v1", "secrets", "Secret", True),
    "Certificate": ResourceType(CM, "v1", "certificates", "Certificate", True),
    "Issuer": ResourceType(CM, "v1", "issuers", "Issuer", True),
    "ClusterIssuer": ResourceType(CM, "v1", "clusterissuers", "ClusterIssuer", False),
}


def _findings(objects: list[dict]) -> dict[tuple[str, str, str], dict]:
    check = combined(kueue_check(), cert_manager_check())
    for obj in objects:
        check.observe(TYPES[obj["kind"]], obj)
    return {(f["code"], f["referrer"], f["missing"]): f for f in check.findings()}


def _obj(kind: str, name: str, spec: dict | None = None, namespace: str | None = None, api: str = f"{KQ}/v1beta2"):
    meta = {"name": name, **({"namespace": namespace} if namespace else {})}
    return {"apiVersion": api, "kind": kind, "metadata": meta, **({"spec": spec} if spec is not None else {})}


def test_the_upstream_provisioning_setup_is_whole_and_each_piece_taken_away_is_named():
    setup = upstream("kueue/examples/provisioning_provisioning-setup.yaml")
    assert _findings(setup) == {}
    without = [d for d in setup if d["kind"] != "ProvisioningRequestConfig"]
    [(code, who, missing)] = _findings(without)
    assert (code, who, missing) == ("kueue-check-parameters-missing", "AdmissionCheck/sample-prov",
                                    "ProvisioningRequestConfig/prov-test-config")
    without = [d for d in setup if d["kind"] != "ClusterQueue"]
    assert set(_findings(without)) == {("kueue-cluster-queue-missing", "LocalQueue/default/user-queue",
                                        "ClusterQueue/cluster-queue")}


def test_a_flavor_naming_a_missing_topology():
    flavor = _obj("ResourceFlavor", "tas", {"nodeLabels": {"pool": "a"}, "topologyName": "dc"})
    [key] = _findings([flavor])
    assert key == ("kueue-topology-missing", "ResourceFlavor/tas", "Topology/dc")
    assert _findings([flavor, _obj("Topology", "dc", {"levels": [{"nodeLabel": "zone"}]})]) == {}


def test_multikueue_config_clusters_and_their_kubeconfig_secrets():
    config = _obj("MultiKueueConfig", "workers", {"clusters": ["worker-1", "worker-2"]})
    check = _obj("AdmissionCheck", "multikueue", {"controllerName": "kueue.x-k8s.io/multikueue", "parameters": {
        "apiGroup": KQ, "kind": "MultiKueueConfig", "name": "workers"}})
    v1beta2 = _obj("MultiKueueCluster", "worker-1",
                   {"clusterSource": {"kubeConfig": {"locationType": "Secret", "location": "worker-1-kubeconfig"}}})
    v1beta1 = _obj("MultiKueueCluster", "worker-2", {"kubeConfig": {"location": "worker-2-kubeconfig"}},
                   api=f"{KQ}/v1beta1")
    on_disk = _obj("MultiKueueCluster", "worker-3", {"kubeConfig": {"locationType": "Path", "location": "/etc/w3"}})
    secret = _obj("Secret", "worker-1-kubeconfig", None, "kueue-system", api="v1")
    found = _findings([config, check, v1beta2, secret, on_disk])
    assert set(found) == {("kueue-multikueue-cluster-missing", "MultiKueueConfig/workers", "MultiKueueCluster/worker-2")}
    found = _findings([config, check, v1beta2, v1beta1])
    assert set(found) == {
        ("kueue-kubeconfig-secret-missing", "MultiKueueCluster/worker-1", "Secret/kueue-system/worker-1-kubeconfig"),
        ("kueue-kubeconfig-secret-missing", "MultiKueueCluster/worker-2", "Secret/kueue-system/worker-2-kubeconfig")}
    assert set(_findings([check])) == {("kueue-check-parameters-missing", "AdmissionCheck/multikueue",
                                        "MultiKueueConfig/workers")}


def test_cohorts_without_an_object_are_implicit_and_only_info():
    queue = _obj("ClusterQueue", "team-a", {"cohortName": "research", "resourceGroups": []})
    old = _obj("ClusterQueue", "team-b", {"cohort": "research"}, api=f"{KQ}/v1beta1")
    child = _obj("Cohort", "research", {"parentName": "org"})
    found = _findings([queue, old, child])
    assert set(found) == {("kueue-cohort-implicit", "Cohort/research", "Cohort/org")}
    assert found[("kueue-cohort-implicit", "Cohort/research", "Cohort/org")]["severity"] == "info"
    assert {k[1] for k in _findings([queue, old])} == {"ClusterQueue/team-a", "ClusterQueue/team-b"}


def test_certificates_naming_an_issuer_the_backup_lacks():
    api = f"{CM}/v1"
    issuer = _obj("Issuer", "selfsigned", {"selfSigned": {}}, "team-a", api=api)
    by_issuer = _obj("Certificate", "web", {"secretName": "web-tls", "issuerRef": {"name": "selfsigned"}}, "team-a", api)
    elsewhere = _obj("Certificate", "api", {"secretName": "api-tls", "issuerRef": {"name": "selfsigned"}}, "team-b", api)
    cluster = _obj("Certificate", "db", {"secretName": "db-tls", "issuerRef": {"name": "vault", "kind": "ClusterIssuer"}},
                   "team-a", api)
    external = _obj("Certificate", "x", {"secretName": "x-tls", "issuerRef": {
        "name": "aws-pca", "kind": "AWSPCAClusterIssuer", "group": "awspca.cert-manager.io"}}, "team-a", api)
    found = _findings([issuer, by_issuer, elsewhere, cluster, external])
    assert set(found) == {("cert-manager-issuer-missing", "Certificate/team-b/api", "Issuer/team-b/selfsigned"),
                          ("cert-manager-issuer-missing", "Certificate/team-a/db", "ClusterIssuer/vault")}
    assert all(f["severity"] == "warning" and f["object"] == f["referrer"] for f in found.values())


def test_issuer_secrets_the_backup_lacks():
    api = f"{CM}/v1"
    vault = _obj("ClusterIssuer", "vault", {"vault": {"server": "https://vault.example.com", "path": "pki/sign/x",
                                                      "auth": {"tokenSecretRef": {"name": "vault-token", "key": "t"}}}},
                 api=api)
    acme = _obj("Issuer", "le", {"acme": {"server": "https://acme.example.com/dir",
                                          "privateKeySecretRef": {"name": "le-account"}}}, "team-a", api)
    ca = _obj("Issuer", "ca", {"ca": {"secretName": "ca-key-pair"}}, "team-a", api)
    present = _obj("Secret", "ca-key-pair", None, "team-a", api="v1")
    found = _findings([vault, acme, ca, present])
    assert {k: f["severity"] for k, f in found.items()} == {
        ("cert-manager-secret-missing", "ClusterIssuer/vault", "Secret/cert-manager/vault-token"): "warning",
        ("cert-manager-secret-missing", "Issuer/team-a/le", "Secret/team-a/le-account"): "info"}


def test_a_real_backup_records_them(pipeline):
    """The populated source: its ClusterIssuer's ACME account Secret was never created."""
    findings = {(f["code"], f.get("referrer"), f.get("missing")): f for f in pipeline.backup().findings}
    key = ("cert-manager-secret-missing", "ClusterIssuer/letsencrypt", "Secret/cert-manager/letsencrypt-account")
    assert findings[key]["severity"] == "info"
    assert not [k for k in findings if k[0] == "cert-manager-issuer-missing"]  # web's Issuer is there
    assert not [k for k in findings if k[0] == "kueue-check-parameters-missing"]  # prov-test-config is there


def test_an_issuer_ref_whose_kind_defaults_to_issuer_while_a_cluster_issuer_exists():
    """cert-manager reads a missing issuerRef.kind as Issuer: a ClusterIssuer of that name is not used."""
    certificate = _obj("Certificate", "web", {"secretName": "web-tls", "issuerRef": {"name": "letsencrypt"}},
                       "ml", api=f"{CM}/v1")
    found = _findings([certificate, _obj("ClusterIssuer", "letsencrypt", {"acme": {}}, api=f"{CM}/v1")])
    finding = found[("cert-manager-issuer-missing", "Certificate/ml/web", "Issuer/ml/letsencrypt")]
    assert finding["field"] == "spec.issuerRef.kind"
    assert "defaults to Issuer" in finding["message"] and "ClusterIssuer/letsencrypt does" in finding["message"]
    assert finding["action"].startswith("set spec.issuerRef.kind: ClusterIssuer in Certificate/ml/web")
    # with no ClusterIssuer of that name either, the plain finding
    plain = _findings([certificate])[("cert-manager-issuer-missing", "Certificate/ml/web", "Issuer/ml/letsencrypt")]
    assert "field" not in plain and "not in the backup" in plain["message"]
