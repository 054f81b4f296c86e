"""Restore order, seen from the destination's request log; dry runs, conflicts, remapping."""

from __future__ import annotations

import os

import kubernetes

from dr.contract import OutcomeStatus
from tests.harness import EmulatedCluster, write_kubeconfig
from tests.kubernetes.conftest import failures, statuses


def create_times(cluster, resource: str) -> list[float]:
    return [r.time for r in cluster.requests if r.verb == "create" and r.resource == resource and r.status == 201]


def assert_before(cluster, first: str, then: str) -> None:
    a, b = create_times(cluster, first), create_times(cluster, then)
    assert a and b, f"no creates of {first} or {then}"
    assert max(a) < min(b), f"{first} must all be created before any {then}"


def test_custom_resources_wait_until_their_crd_is_established(tmp_path, source, pipeline):
    backup = pipeline.backup()
    with EmulatedCluster(name="slow", crd_establish_delay=1.5) as slow:
        config = write_kubeconfig(os.path.join(tmp_path, "slow"), {"slow": slow})
        outcomes = pipeline.restore(backup.artifacts, to=f"{config}:slow")
        assert failures(outcomes) == []
        crd_created = max(create_times(slow, "customresourcedefinitions"))
        first_cr = min(create_times(slow, "clusterqueues") + create_times(slow, "leaderworkersets"))
        assert first_cr - crd_created >= 1.5, "a custom resource was created before its CRD was Established"
        assert slow.count(verb="create", status=404) == 0  # nothing raced an unserved type
        assert slow.errors == []


def test_kueue_cert_manager_and_workload_order(pipeline, dest):
    outcomes = pipeline.restore(pipeline.backup().artifacts)
    assert failures(outcomes) == []
    assert_before(dest, "customresourcedefinitions", "resourceflavors")
    assert_before(dest, "namespaces", "configmaps")
    for first in ("resourceflavors", "admissionchecks", "cohorts"):
        assert_before(dest, first, "clusterqueues")
    assert_before(dest, "provisioningrequestconfigs", "admissionchecks")
    assert_before(dest, "topologies", "resourceflavors")
    assert_before(dest, "clusterqueues", "localqueues")
    assert_before(dest, "secrets", "certificates")  # else cert-manager reissues
    assert_before(dest, "issuers", "certificates")
    assert_before(dest, "clusterissuers", "certificates")
    for config in ("secrets", "configmaps", "serviceaccounts", "priorityclasses", "storageclasses", "localqueues"):
        assert_before(dest, config, "deployments")
    assert_before(dest, "deployments", "validatingwebhookconfigurations")
    assert_before(dest, "leaderworkersets", "validatingwebhookconfigurations")


def test_dry_run_plans_in_order_and_changes_nothing(pipeline, dest):
    backup = pipeline.backup()
    before = dest.resource_version
    dest.reset_requests()
    outcomes = pipeline.restore(backup.artifacts, dry_run=True)
    objects = [o for o in outcomes if o.status != OutcomeStatus.SKIPPED]
    assert objects and all(o.status == OutcomeStatus.PLANNED and o.reason for o in objects)
    levels = [int(o.reason.split()[1]) for o in objects]
    assert levels == sorted(levels)
    order = [o.item.split("/")[0] for o in objects]
    assert order.index("customresourcedefinitions.apiextensions.k8s.io") < order.index("clusterqueues.kueue.x-k8s.io")
    assert max(i for i, t in enumerate(order) if t == "secrets") < order.index("certificates.cert-manager.io")
    assert dest.resource_version == before and dest.requests == []


def test_a_changed_object_is_a_conflict_until_overwrite(pipeline, dest):
    backup = pipeline.backup()
    pipeline.restore(backup.artifacts)
    core = kubernetes.client.CoreV1Api(dest.api_client())
    core.patch_namespaced_config_map("settings", "team-a", {"data": {"mode": "serve"}})

    outcomes = {o.item: o for o in pipeline.restore(backup.artifacts)}
    conflict = outcomes["configmaps/team-a/settings"]
    assert conflict.status == OutcomeStatus.CONFLICT and "data.mode" in conflict.reason
    assert core.read_namespaced_config_map("settings", "team-a").data == {"mode": "serve"}
    assert statuses(list(outcomes.values()))["conflict"] == 1

    replaced = {o.item: o for o in pipeline.restore(backup.artifacts, overwrite=True)}
    assert replaced["configmaps/team-a/settings"].status == OutcomeStatus.RESTORED
    assert core.read_namespaced_config_map("settings", "team-a").data == {"mode": "train"}
    assert {o.status for o in pipeline.restore(backup.artifacts)} <= {OutcomeStatus.UNCHANGED, OutcomeStatus.SKIPPED}


def test_namespace_remap(pipeline, dest):
    backup = pipeline.backup()
    remap = {"namespace:team-a": "team-x", "image-registry:registry.internal:5000": "mirror.example.com"}
    outcomes = pipeline.restore(backup.artifacts, remap=remap)
    assert failures(outcomes) == []
    assert dest.get_object("v1", "Secret", "db", "team-x") is not None
    assert dest.get_object("v1", "Namespace", "team-a") is None
    namespace = dest.get_object("v1", "Namespace", "team-x")
    assert namespace["metadata"]["labels"]["kubernetes.io/metadata.name"] == "team-x"
    binding = dest.get_object("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", "queue-viewer")
    assert binding["subjects"][0]["namespace"] == "team-x"
    deployment = dest.get_object("apps/v1", "Deployment", "server", "team-x")
    assert deployment["spec"]["template"]["spec"]["containers"][0]["image"] == "mirror.example.com/ml/server:1.2"
    again = pipeline.restore(backup.artifacts, remap=remap)
    assert {o.status for o in again} <= {OutcomeStatus.UNCHANGED, OutcomeStatus.SKIPPED}, failures(again)


def test_unknown_remap_keys_fail_before_anything_is_done(pipeline, dest):
    outcomes = pipeline.restore(pipeline.backup().artifacts, remap={"ns:a": "b"})
    assert [(o.item, o.status) for o in outcomes] == [("remap", OutcomeStatus.FAILED)]
    assert "namespace:<old>" in outcomes[0].reason


def test_a_missing_destination_is_a_failed_outcome(pipeline):
    outcomes = pipeline.restore(pipeline.backup().artifacts, to="")
    assert [(o.item, o.status) for o in outcomes] == [("destination", OutcomeStatus.FAILED)]
