"""Where a claim's data lives, from its class, its bound volume and the provisioner table (issue 26, item 1).

Pure logic over objects shaped as the API server returns them; tests/audit/test_volume_data.py
runs the same through dr backup and dr audit against the emulated cluster.
"""

from __future__ import annotations

from types import SimpleNamespace

from dr.exporters.kubernetes.provisioners import PROVISIONERS, ProvisionerRule, rule_for
from dr.exporters.kubernetes.volumedata import VolumeData

API = "https://4F1C2B7E9A0D.gr7.eu-central-1.eks.amazonaws.com"


def _class(name: str, provisioner: str, default: bool = False, **extra) -> dict:
    annotations = {"storageclass.kubernetes.io/is-default-class": "true"} if default else {}
    return {"metadata": {"name": name, "annotations": annotations}, "provisioner": provisioner, **extra}


def _claim(name: str, storage_class: str | None = None, volume: str | None = None) -> dict:
    spec = {"accessModes": ["ReadWriteOnce"]}
    if storage_class is not None:
        spec["storageClassName"] = storage_class
    if volume:
        spec["volumeName"] = volume
    return {"metadata": {"name": name, "namespace": "ml"}, "spec": spec}


def _regional_pd(name: str) -> dict:
    """A regional Persistent Disk as the GCE PD CSI driver binds it: two zones in its node affinity."""
    return {"metadata": {"name": name}, "spec": {
        "csi": {"driver": "pd.csi.storage.gke.io", "volumeHandle": "projects/p/regions/europe-west4/disks/d"},
        "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
            {"key": "topology.gke.io/zone", "operator": "In", "values": ["europe-west4-a", "europe-west4-b"]}]}]}}}}


def _claims(pvcs, pvs=(), classes=(), rules=()):
    return {c.name: c for c in VolumeData(API, rules).claims(list(pvcs), list(pvs), list(classes))}


def test_every_provisioner_rule_gives_its_reason_and_a_known_place():
    assert all(rule.why and rule.where in ("cluster", "zone", "region") for rule in PROVISIONERS)
    assert rule_for("rook-ceph.rbd.csi.ceph.com").where == "cluster"
    assert rule_for("openebs.io/local") is None and rule_for("local.csi.openebs.io").where == "cluster"
    assert rule_for("cluster-nfs-subdir-external-provisioner").where == "cluster"
    assert rule_for("EBS.CSI.AWS.COM").where == "zone"
    assert rule_for("storage.example.com/array") is None


def test_the_plans_rule_comes_before_the_table():
    mine = ProvisionerRule("nfs.csi.k8s.io", "region", "our NFS server is a regional filer outside the cluster")
    assert rule_for("nfs.csi.k8s.io", [mine]) is mine


def test_a_claim_without_a_class_gets_the_default_class_and_an_empty_class_the_volumes():
    classes = [_class("standard", "rancher.io/local-path", default=True), _class("gp3", "ebs.csi.aws.com")]
    local = {"metadata": {"name": "pv-local"}, "spec": {"storageClassName": "", "local": {"path": "/mnt/disks/1"}}}
    found = _claims([_claim("a"), _claim("b", "", "pv-local")], [local], classes)
    assert (found["a"].storage_class, found["a"].provisioner, found["a"].where) == \
        ("standard", "rancher.io/local-path", "cluster")
    assert found["a"].reference == f"{API}/api/v1/namespaces/ml/persistentvolumeclaims/a"
    assert (found["b"].provisioner, found["b"].where) == ("kubernetes.io/no-provisioner", "cluster")


def test_a_volume_in_two_zones_of_a_region_is_in_the_region():
    found = _claims([_claim("db", "regional", "pv-1")], [_regional_pd("pv-1")],
                    [_class("regional", "pd.csi.storage.gke.io", parameters={"replication-type": "regional-pd"})])
    assert (found["db"].where, found["db"].at, found["db"].reference) == \
        ("region", "europe-west4", "volume://europe-west4/ml/db")


def test_an_unbound_cloud_claim_is_placed_by_its_class_topology_else_nowhere():
    classes = [_class("gp3", "ebs.csi.aws.com", volumeBindingMode="WaitForFirstConsumer"),
               _class("gp3-a", "ebs.csi.aws.com", allowedTopologies=[{"matchLabelExpressions": [
                   {"key": "topology.ebs.csi.aws.com/zone", "values": ["eu-central-1a"]}]}]),
               _class("efs", "efs.csi.aws.com", parameters={"provisioningMode": "efs-ap", "region": "eu-central-1"})]
    found = _claims([_claim("x", "gp3"), _claim("y", "gp3-a"), _claim("z", "efs")], classes=classes)
    assert (found["x"].where, found["x"].reference) == ("", "volume:///ml/x")
    assert "neither a bound volume nor the storage class says which zone" in found["x"].why
    assert found["y"].reference == "volume://eu-central-1a/ml/y"
    assert found["z"].reference == "volume://eu-central-1/ml/z"


def test_the_bound_volumes_driver_wins_over_the_class_and_in_tree_volumes_are_named():
    ebs = {"metadata": {"name": "pv-old", "labels": {"topology.kubernetes.io/zone": "eu-central-1b"}},
           "spec": {"awsElasticBlockStore": {"volumeID": "aws://eu-central-1b/vol-1"}}}
    found = _claims([_claim("old", "gone", "pv-old")], [ebs])
    assert (found["old"].provisioner, found["old"].reference) == ("kubernetes.io/aws-ebs", "volume://eu-central-1b/ml/old")


def test_statefulset_templates_make_one_claim_per_replica_and_name_their_workload():
    volumes = VolumeData(API)
    template = {"metadata": {"name": "data"}, "spec": {"storageClassName": "rook-ceph-block"}}
    sts = {"metadata": {"name": "qdrant", "namespace": "ml"},
           "spec": {"replicas": 2, "template": {"spec": {"containers": [{"name": "q", "image": "qdrant/qdrant"}]}},
                    "volumeClaimTemplates": [template]}}
    deployment = {"metadata": {"name": "web", "namespace": "ml"}, "spec": {"template": {"spec": {
        "containers": [{"name": "w", "image": "nginx"}],
        "volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": "uploads"}}]}}}}
    volumes.observe(SimpleNamespace(key=("apps", "statefulsets"), kind="StatefulSet"), sts)
    volumes.observe(SimpleNamespace(key=("apps", "deployments"), kind="Deployment"), deployment)
    classes = [_class("rook-ceph-block", "rook-ceph.rbd.csi.ceph.com")]
    found = {c.name: c for c in volumes.claims([_claim("data-qdrant-0", "rook-ceph-block"),
                                                 _claim("uploads", "unknown-class")], [], classes)}
    assert sorted(found) == ["data-qdrant-0", "data-qdrant-1", "uploads"]
    assert found["data-qdrant-0"].workload == found["data-qdrant-1"].workload == "StatefulSet ml/qdrant"
    assert found["uploads"].workload == "Deployment ml/web" and found["uploads"].where == ""
    detail = found["data-qdrant-1"].dependency().detail
    assert "PersistentVolumeClaim ml/data-qdrant-1, mounted by StatefulSet ml/qdrant" in detail, detail
    assert "no dr source backs up this volume's data" in detail


def test_a_managed_api_host_placed_only_by_its_region_leaves_in_cluster_claims_placed_nowhere():
    """An EKS API host names its region: without a location for it, the region rule would place
    Rook Ceph's claims in eu-central-1 and a lost cluster would seem to keep them."""
    classes = [_class("rook-ceph-block", "rook-ceph.rbd.csi.ceph.com")]
    regional = ["*.eu-central-1.amazonaws.com", "eu-central-1-*.googleapis.com"]
    only_region = VolumeData(API, hosts=regional).claims([_claim("db", "rook-ceph-block")], [], classes)
    assert only_region[0].reference == "volume:///ml/db", only_region
    assert "only by its region eu-central-1" in only_region[0].why
    located = VolumeData(API, hosts=regional + [API.split("//")[1].lower()]).claims(
        [_claim("db", "rook-ceph-block")], [], classes)
    assert located[0].reference == f"{API}/api/v1/namespaces/ml/persistentvolumeclaims/db"


def test_a_claim_is_named_with_its_most_lasting_workload():
    volumes = VolumeData(API)
    mounting = {"spec": {"containers": [{"name": "w", "image": "nginx"}],
                         "volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": "uploads"}}]}}
    pod = {"metadata": {"name": "web-5d9c-x2", "namespace": "ml"}, **mounting}
    replicaset = {"metadata": {"name": "web-5d9c", "namespace": "ml"}, "spec": {"template": mounting}}
    deployment = {"metadata": {"name": "web", "namespace": "ml"}, "spec": {"template": mounting}}
    for key, kind, obj in ((("", "pods"), "Pod", pod), (("apps", "deployments"), "Deployment", deployment),
                           (("apps", "replicasets"), "ReplicaSet", replicaset)):
        volumes.observe(SimpleNamespace(key=key, kind=kind), obj)
    [claim] = volumes.claims([_claim("uploads", "x")], [], [])
    assert claim.workload == "Deployment ml/web"


def test_a_generic_ephemeral_volumes_claim_is_scratch_space_not_state():
    scratch = _claim("trainer-0-scratch", "rook-ceph-block")
    scratch["metadata"]["ownerReferences"] = [{"apiVersion": "v1", "kind": "Pod", "name": "trainer-0",
                                               "uid": "0b5c", "controller": True, "blockOwnerDeletion": True}]
    found = _claims([scratch, _claim("data", "rook-ceph-block")],
                    classes=[_class("rook-ceph-block", "rook-ceph.rbd.csi.ceph.com")])
    assert sorted(found) == ["data"]
