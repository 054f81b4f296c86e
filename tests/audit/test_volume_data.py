"""Where volume data lives (issue 26, item 1), end to end: dr backup of an emulated cluster, then dr audit.

The emulated API server serves the claims, volumes and classes as a real one would (no
provisioner runs: the PersistentVolumes are created bound, as a CSI driver would have left
them). The objects follow the projects' documented examples: Rook Ceph's `rook-ceph-block`
class (provisioner rook-ceph.rbd.csi.ceph.com), an EBS gp3 class with WaitForFirstConsumer and
the PersistentVolume the EBS CSI driver creates (node affinity on topology.ebs.csi.aws.com/zone).

  qdrant   a StatefulSet whose volumeClaimTemplate asks for rook-ceph-block (no claim exists yet):
           its data is on the cluster's own disks, a blocker when cluster-a is lost
  postgres a Deployment mounting a claim bound to an EBS volume in eu-central-1a: the disk
           outlives the cluster (ok when only cluster-a is lost) but not its zone or region
  cache    a claim in eu-central-1b's EBS disk: lost with eu-central-1b only
  legacy   a claim of a class whose provisioner nobody knows: an unknown location naming it
  scratch  a custom provisioner the source's placement_rules place in the cluster
"""

from __future__ import annotations

import json
import os

import pytest
import yaml

from dr.cli.exitcodes import Exit
from dr.repository.encryption import generate_identity
from tests.audit.test_coverage import _audit, dr  # noqa: F401  (dr is a fixture)
from tests.harness import write_kubeconfig
from tests.kubernetes.upstream import cluster_with

IMAGE = "docker.io/library/busybox:1.36"
ROOK = "rook-ceph.rbd.csi.ceph.com"


def _pod(app: str, claim: str | None = None) -> dict:
    spec: dict = {"containers": [{"name": "main", "image": IMAGE}]}
    if claim:
        spec["volumes"] = [{"name": "data", "persistentVolumeClaim": {"claimName": claim}}]
    return {"metadata": {"labels": {"app": app}}, "spec": spec}


def _deployment(name: str, claim: str) -> dict:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": "ml"},
            "spec": {"selector": {"matchLabels": {"app": name}}, "template": _pod(name, claim)}}


def _claim(name: str, storage_class: str, volume: str | None = None) -> dict:
    spec = {"accessModes": ["ReadWriteOnce"], "storageClassName": storage_class,
            "resources": {"requests": {"storage": "10Gi"}}}
    if volume:
        spec["volumeName"] = volume
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name, "namespace": "ml"},
            "spec": spec}


def _ebs_volume(name: str, claim: str, zone: str) -> dict:
    """As the EBS CSI driver leaves it (external-provisioner annotation, zone in node affinity)."""
    return {"apiVersion": "v1", "kind": "PersistentVolume",
            "metadata": {"name": name, "annotations": {"pv.kubernetes.io/provisioned-by": "ebs.csi.aws.com"}},
            "spec": {"capacity": {"storage": "10Gi"}, "accessModes": ["ReadWriteOnce"],
                     "persistentVolumeReclaimPolicy": "Delete", "storageClassName": "gp3",
                     "claimRef": {"kind": "PersistentVolumeClaim", "namespace": "ml", "name": claim},
                     "csi": {"driver": "ebs.csi.aws.com", "volumeHandle": "vol-0a1b2c3d4e5f60718",
                             "fsType": "ext4"},
                     "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                         {"key": "topology.ebs.csi.aws.com/zone", "operator": "In", "values": [zone]}]}]}}}}


def _objects() -> list[dict]:
    template = {"metadata": {"name": "storage"}, "spec": {
        "accessModes": ["ReadWriteOnce"], "storageClassName": "rook-ceph-block",
        "resources": {"requests": {"storage": "20Gi"}}}}
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ml"}},
        {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "rook-ceph-block"},
         "provisioner": ROOK, "reclaimPolicy": "Delete", "allowVolumeExpansion": True,
         "parameters": {"clusterID": "rook-ceph", "pool": "replicapool", "imageFormat": "2",
                        "imageFeatures": "layering", "csi.storage.k8s.io/fstype": "ext4"}},
        {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "gp3"},
         "provisioner": "ebs.csi.aws.com", "volumeBindingMode": "WaitForFirstConsumer",
         "parameters": {"type": "gp3", "encrypted": "true"}},
        {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "legacy"},
         "provisioner": "storage.example.com/array"},
        {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "scratch"},
         "provisioner": "scratch.example.com"},
        {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "qdrant", "namespace": "ml"},
         "spec": {"serviceName": "qdrant", "replicas": 1, "selector": {"matchLabels": {"app": "qdrant"}},
                  "template": _pod("qdrant"), "volumeClaimTemplates": [template]}},
        _ebs_volume("pvc-3f1e", "postgres-data", "eu-central-1a"),
        _ebs_volume("pvc-7c2a", "cache-data", "eu-central-1b"),
        _claim("postgres-data", "gp3", "pvc-3f1e"), _claim("cache-data", "gp3", "pvc-7c2a"),
        _claim("legacy-data", "legacy"), _claim("scratch-data", "scratch"),
        _deployment("postgres", "postgres-data"), _deployment("cache", "cache-data"),
        _deployment("legacy", "legacy-data"), _deployment("scratch", "scratch-data"),
    ]


def _plan(root, kubeconfig: str, api: str, rules: list[dict]) -> str:
    data = {
        "version": 1, "name": "volumes",
        "failure_domains": [{"name": "aws", "kind": "provider", "children": [
            {"name": "eu-central-1", "kind": "region", "children": [
                {"name": "eu-central-1a", "kind": "zone", "children": [{"name": "cluster-a", "kind": "cluster"}]},
                {"name": "eu-central-1b", "kind": "zone"}]},
            {"name": "us-east-1", "kind": "region"}]}],
        "locations": [{"name": "cluster-a-api", "domain": "cluster-a", "kind": "kubernetes-api", "url": api},
                      {"name": "dr-us", "domain": "us-east-1", "kind": "secret-store", "prefixes": [str(root)]},
                      {"name": "hub", "domain": "aws", "kind": "registry", "hosts": ["docker.io"]}],
        "protects_against": ["cluster-a", "eu-central-1a", "eu-central-1b", "eu-central-1"],
        "encryption": {"recipients": [generate_identity()[1]], "key_location": str(root / "age-identity")},
        "targets": [{"name": "dr", "url": str(root / "repo"), "domain": "us-east-1",
                     "credentials_location": str(root)}],
        "sources": [{"name": "cluster", "type": "kubernetes", "kubeconfig": kubeconfig, "context": "source",
                     "rpo": "1h", "placement_rules": rules}],
    }
    path = root / "plan.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return str(path)


SCRATCH_RULE = {"provisioner": "scratch.example.com", "where": "cluster",
                "reason": "our scratch provisioner carves volumes out of the nodes' NVMe disks"}


@pytest.fixture(scope="module")
def cluster():
    with cluster_with([], _objects()) as emulated:
        yield emulated


@pytest.fixture
def audited(dr, capsys, tmp_path, cluster):  # noqa: F811
    kubeconfig = write_kubeconfig(os.path.join(tmp_path, "kubeconfig"), {"source": cluster}, current="source")
    plan = _plan(tmp_path, kubeconfig, cluster.url, [SCRATCH_RULE])
    assert dr(["backup", "--plan", plan]) == Exit.OK, capsys.readouterr()
    code, document = _audit(dr, capsys, plan)
    return code, document, cluster.url


def _volume_findings(document: dict, claim: str) -> dict[str | None, dict]:
    """scenario -> the finding on that claim's volume data (None: scenario-independent)."""
    return {f["scenario"]: f for f in document["findings"]
            if f["kind"] == "volume-data" and f["reference"].endswith(f"/ml/{claim}")
            or f["kind"] == "volume-data" and f["reference"].endswith(f"/persistentvolumeclaims/{claim}")}


def test_a_rook_ceph_claim_is_lost_with_its_cluster_naming_claim_workload_and_fix(audited):
    _, document, api = audited
    found = _volume_findings(document, "storage-qdrant-0")
    assert set(found) == {"cluster-a", "eu-central-1a", "eu-central-1"}, found  # not eu-central-1b
    finding = found["cluster-a"]
    assert finding["code"] == "volume-data-lost" and finding["severity"] == "blocker", finding
    assert finding["reference"] == f"{api}/api/v1/namespaces/ml/persistentvolumeclaims/storage-qdrant-0"
    message = finding["message"]
    for part in ("PersistentVolumeClaim ml/storage-qdrant-0", "mounted by StatefulSet ml/qdrant",
                 f"provisioner {ROOK}", "Rook Ceph keeps the data", "the workload with empty volumes",
                 "no dr source backs up this volume's data", "docs/exporters/kubernetes.md"):
        assert part in message, (part, message)
    assert "No dr source backs up this volume" in finding["action"] and "docs/exporters/kubernetes.md" in finding["action"], finding
    assert finding["runbook"] == "runbooks/volume-data-lost.md"


def test_an_ebs_claim_survives_its_cluster_but_not_its_zone_or_region(audited):
    _, document, _ = audited
    found = _volume_findings(document, "postgres-data")
    assert set(found) == {"eu-central-1a", "eu-central-1"}, found  # cluster-a alone: the disk outlives it
    assert found["eu-central-1a"]["reference"] == "volume://eu-central-1a/ml/postgres-data"
    assert found["eu-central-1a"]["domain"] == "eu-central-1a" and found["eu-central-1a"]["code"] == "volume-data-lost"
    assert "mounted by Deployment ml/postgres" in found["eu-central-1a"]["message"]
    assert "an EBS volume is a disk in one availability zone" in found["eu-central-1a"]["message"]
    # the disk in the other zone: lost with that zone and the region, not with cluster-a or eu-central-1a
    assert set(_volume_findings(document, "cache-data")) == {"eu-central-1b", "eu-central-1"}


def test_an_unknown_provisioner_is_an_unknown_location_naming_it(audited):
    _, document, _ = audited
    found = _volume_findings(document, "legacy-data")
    assert set(found) == {None}, found
    finding = found[None]
    assert finding["code"] == "unknown-location" and finding["severity"] == "warning", finding
    assert "provisioner storage.example.com/array" in finding["message"], finding["message"]
    assert "placement_rules" in finding["message"], finding["message"]


def test_a_plan_placement_rule_places_a_custom_provisioner(audited):
    _, document, _ = audited
    found = _volume_findings(document, "scratch-data")
    assert set(found) == {"cluster-a", "eu-central-1a", "eu-central-1"}, found
    assert SCRATCH_RULE["reason"] in found["cluster-a"]["message"], found["cluster-a"]


def test_a_bad_placement_rule_is_a_plan_error_naming_the_file_and_field(dr, capsys, tmp_path):  # noqa: F811
    plan = _plan(tmp_path, str(tmp_path / "kubeconfig"), "https://api.example.com",
                 [{"provisioner": "scratch.example.com", "where": "rack", "reason": "x"}])
    capsys.readouterr()
    code = dr(["plan", "validate", plan])
    err = capsys.readouterr()
    text = err.out + err.err
    assert code != Exit.OK, text
    assert plan in text and "sources[0].placement_rules[0].where" in text, text
    assert "'cluster', 'zone' or 'region'" in text, text


def test_the_restore_plan_gives_the_audits_verdicts(audited, dr, capsys, tmp_path):  # noqa: F811
    """One engine, one answer: losing cluster-a, the cluster step needs the Rook Ceph claim's data
    (a blocker, refused without --force) and not the EBS disk, which outlives the cluster."""
    _, _, api = audited
    capsys.readouterr()
    dr(["restore", "--plan", str(tmp_path / "plan.yaml"), "--failed", "cluster-a", "--dry-run", "--json"])
    [step] = [s for s in json.loads(capsys.readouterr().out)["steps"] if s["name"] == "cluster"]
    needs = {n["reference"]: n for n in step["needs"] if n["kind"] == "volume-data"}
    assert needs[f"{api}/api/v1/namespaces/ml/persistentvolumeclaims/storage-qdrant-0"]["verdict"] == "blocker"
    assert needs["volume://eu-central-1a/ml/postgres-data"]["verdict"] == "ok", needs
    assert needs["volume:///ml/legacy-data"]["verdict"] == "unknown", needs
