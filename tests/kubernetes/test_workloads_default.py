"""Workloads by default (issue 10): the default export holds them; a narrower plan names what it
leaves out, and still scans it for dependencies.

Its own emulated cluster: the platform objects plus a StatefulSet whose env names a bucket, a
DaemonSet on an in-cluster image, a standalone Pod, a Pod and a Job with owners.
"""

from __future__ import annotations

import os

import pytest

from dr.exporters.kubernetes import KubernetesExporter
from dr.exporters.kubernetes.options import DEFAULT_WORKLOAD_KINDS
from tests.harness import EmulatedCluster, write_kubeconfig
from tests.kubernetes.conftest import Pipeline, _checked_stop
from tests.kubernetes.upstream import platform_objects

IN_CLUSTER = "registry.cluster-a.internal:5000/ml/agent:3"


def _pod(image: str, **extra) -> dict:
    return {"containers": [{"name": "c", "image": image, **extra}]}


def workload_objects() -> list[dict]:
    owner = [{"apiVersion": "batch/v1", "kind": "CronJob", "name": "nightly", "uid": "u1", "controller": True}]
    return [
        {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "db", "namespace": "team-a"},
         "spec": {"serviceName": "db", "selector": {"matchLabels": {"app": "db"}}, "template": {
             "metadata": {"labels": {"app": "db"}},
             "spec": _pod("postgres:16", env=[{"name": "WAL", "value": "s3://wal-eu-west-1/db/"}])}}},
        {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "agent", "namespace": "team-a"},
         "spec": {"selector": {"matchLabels": {"app": "agent"}}, "template": {
             "metadata": {"labels": {"app": "agent"}}, "spec": _pod(IN_CLUSTER)}}},
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "debug", "namespace": "team-a"},
         "spec": _pod("busybox")},
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "server-abc", "namespace": "team-a",
                                                         "ownerReferences": [dict(owner[0], kind="ReplicaSet",
                                                                                  apiVersion="apps/v1", name="server-1")]},
         "spec": _pod("registry.internal:5000/ml/server:1.2")},
        {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "nightly-1", "namespace": "team-b",
                                                               "ownerReferences": owner},
         "spec": {"template": {"spec": dict(_pod("busybox:1.36"), restartPolicy="Never")}}},
    ]


@pytest.fixture(scope="module")
def cluster():
    cluster = EmulatedCluster(name="source").start()
    try:
        cluster.create_objects(platform_objects())
        cluster.create_objects(workload_objects())
        yield cluster
    finally:
        _checked_stop(cluster)


@pytest.fixture
def pipeline(tmp_path, cluster) -> Pipeline:
    return Pipeline(tmp_path, write_kubeconfig(os.path.join(tmp_path, "kubeconfig"), {"source": cluster},
                                               current="source"))


def test_the_options_default_to_the_workloads():
    options = KubernetesExporter.Options()
    assert options.workload_kinds == DEFAULT_WORKLOAD_KINDS
    assert set(DEFAULT_WORKLOAD_KINDS) >= {"Deployment", "StatefulSet", "DaemonSet", "Job", "CronJob"}


def test_the_default_export_holds_every_workload_and_only_standalone_pods(pipeline):
    backup = pipeline.backup(options=KubernetesExporter.Options(kubeconfig=pipeline.kubeconfig, context="source"))
    exported = backup.identities()
    assert {"deployments.apps/team-a", "statefulsets.apps/team-a", "daemonsets.apps/team-a",
            "cronjobs.batch/team-b", "pods/team-a"} <= exported
    assert "jobs.batch/team-b" not in exported  # its only Job is owned by the CronJob
    pods = next(a for a in backup.artifacts if a.identity == "pods/team-a")
    assert pods.meta["objects"] == 1  # debug; server-abc is recreated by its ReplicaSet
    assert not backup.identities("kubernetes-scanned")
    assert not [f for f in backup.findings if f["code"] == "kubernetes-workloads-not-exported"]
    deps = {(d.kind, d.reference) for a in backup.artifacts for d in a.dependencies}
    assert {("bucket", "s3://wal-eu-west-1/db/"), ("image", IN_CLUSTER),
            ("image", "docker.io/library/postgres:16"), ("image", "docker.io/library/busybox")} <= deps


def test_a_narrower_plan_names_what_it_leaves_out_and_still_scans_it(pipeline):
    backup = pipeline.backup(options=KubernetesExporter.Options(
        kubeconfig=pipeline.kubeconfig, context="source", workload_kinds=["Deployment"]))
    assert "statefulsets.apps/team-a" not in backup.identities()
    scanned = {a.identity: a for a in backup.artifacts if a.kind == "kubernetes-scanned"}
    assert {"statefulsets.apps/team-a", "daemonsets.apps/team-a", "cronjobs.batch/team-b", "pods/team-a"} <= set(scanned)
    deps = {(d.kind, d.reference) for a in scanned.values() for d in a.dependencies}
    assert {("bucket", "s3://wal-eu-west-1/db/"), ("image", IN_CLUSTER)} <= deps
    assert all(not a.meta.get("provides") for a in scanned.values())  # nothing of it is restored
    [finding] = [f for f in backup.findings if f["code"] == "kubernetes-workloads-not-exported"]
    assert finding["severity"] == "warning"
    assert set(finding["kinds"]) == {"StatefulSet", "DaemonSet", "Job", "CronJob", "Pod"}
    assert finding["objects"]["StatefulSet"] == 1 and "StatefulSet (1)" in finding["message"]
    assert any("workload_kinds leaves out" in line for line in backup.log)
    outcomes = pipeline.restore(backup.artifacts, dry_run=True)
    skipped = [o for o in outcomes if o.item.startswith("scanned/")]
    assert skipped and all(o.status.value == "skipped" for o in skipped)


def test_scanned_content_names_objects_but_holds_none_of_their_spec(pipeline):
    from dr.repository.reading import ArtifactReader
    backup = pipeline.backup(options=KubernetesExporter.Options(
        kubeconfig=pipeline.kubeconfig, context="source", workload_kinds=["Deployment"]))
    artifact = next(a for a in backup.artifacts if a.identity == "statefulsets.apps/team-a")
    content = ArtifactReader(pipeline.repo, pipeline.identities).read(artifact)
    assert b'"name":"db"' in content and b"wal-eu-west-1" not in content
