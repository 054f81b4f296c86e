"""The claims, volumes and classes the backup lists for volume data (issue 26, item 1): per namespace
when the plan names namespaces (as the rendered Role grants), and a refused list is a warning, not a
silent gap nor a failed backup."""

from __future__ import annotations

import json
import os

import pytest

from dr.repository.reading import ArtifactReader
from tests.harness import write_kubeconfig
from tests.kubernetes.conftest import Pipeline
from tests.kubernetes.upstream import cluster_with

ROOK = "rook-ceph.rbd.csi.ceph.com"


def _claim(namespace: str, name: str) -> dict:
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name, "namespace": namespace},
            "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "rook-ceph-block",
                     "resources": {"requests": {"storage": "1Gi"}}}}


@pytest.fixture(scope="module")
def cluster():
    objects = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}} for ns in ("ml", "other")]
    objects += [{"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "rook-ceph-block"},
                 "provisioner": ROOK, "parameters": {"clusterID": "rook-ceph", "pool": "replicapool"}},
                _claim("ml", "data"), _claim("other", "cache")]
    with cluster_with([], objects) as emulated:
        yield emulated


@pytest.fixture
def pipeline(tmp_path, cluster) -> Pipeline:
    return Pipeline(tmp_path, write_kubeconfig(os.path.join(tmp_path, "kubeconfig"), {"source": cluster},
                                               current="source"))


def _volumes(backup) -> dict[str, list[dict]]:
    return {a.identity: a for a in backup.artifacts if a.kind == "kubernetes-volumes"}


def test_a_plan_naming_namespaces_lists_their_claims_only(pipeline, cluster):
    cluster.reset_requests()
    backup = pipeline.backup(namespaces=["ml"])
    volumes = _volumes(backup)
    assert sorted(volumes) == ["ml"], volumes
    [dependency] = volumes["ml"].dependencies
    assert dependency.kind == "volume-data" and dependency.reference.endswith("/namespaces/ml/persistentvolumeclaims/data")
    assert cluster.count(verb="list", path="/api/v1/namespaces/ml/persistentvolumeclaims") == 1
    assert cluster.count(verb="list", path="/api/v1/persistentvolumeclaims") == 0


def test_every_namespace_and_the_content_names_each_claim(pipeline):
    volumes = _volumes(pipeline.backup())
    assert sorted(volumes) == ["ml", "other"]
    [claim] = json.loads(ArtifactReader(pipeline.repo, pipeline.identities).read(volumes["other"]))
    assert (claim["name"], claim["storage_class"], claim["provisioner"], claim["where"]) == \
        ("cache", "rook-ceph-block", ROOK, "cluster")
    # unchanged claims: the next backup reuses the content (same change token)
    again = _volumes(pipeline.backup())
    assert again["other"].chunks == volumes["other"].chunks


def test_a_refused_list_of_volumes_is_a_warning_and_the_backup_goes_on(pipeline, cluster):
    cluster.fail_next("/api/v1/persistentvolumes", 403, times=1)
    backup = pipeline.backup()
    [warning] = [f for f in backup.findings if f["code"] == "kubernetes-volumes-unlisted"]
    assert warning["severity"] == "warning" and warning["type"] == "persistentvolumes", warning
    assert "the audit cannot judge it" in warning["message"]
    assert not _volumes(backup), "no claim is recorded from a partial view"
    assert backup.identities(), "the objects are still backed up"


def test_a_restore_skips_the_volume_facts_saying_why(pipeline):
    backup = pipeline.backup(namespaces=["ml"])
    outcomes = pipeline.restore([a for a in backup.artifacts if a.kind == "kubernetes-volumes"], dry_run=True)
    assert [(o.item, o.status.value) for o in outcomes] == [("volumes/ml", "skipped")], outcomes
    assert "not their data" in outcomes[0].reason
