"""A restore lists what the destination holds of each type before its creates (surveying.py),
seen from the destination's request log: objects already there cost no create and no read."""

from __future__ import annotations

import kubernetes

from dr.contract import ExportContext, OutcomeStatus, RestoreRequest
from dr.exporters.kubernetes import KubernetesExporter, applying, surveying
from dr.repository.reading import ArtifactReader
from tests.kubernetes.conftest import failures, statuses


def _restore(pipeline, artifacts, log: list[str], **request) -> dict:
    context = ExportContext("cluster", pipeline.options(), base_dir="/", log=log.append)
    reader = ArtifactReader(pipeline.repo, pipeline.identities)
    request = RestoreRequest(to=f"{pipeline.kubeconfig}:dest", **request)
    return {o.item: o for o in KubernetesExporter(context).restore(artifacts, reader, request)}


def _objects(outcomes: dict) -> int:
    return sum(1 for o in outcomes.values() if o.status != OutcomeStatus.SKIPPED)


def test_a_second_restore_lists_each_type_and_sends_no_create(pipeline, dest):
    backup = pipeline.backup()
    first = _restore(pipeline, backup.artifacts, [])
    assert failures(list(first.values())) == []
    dest.reset_requests()
    second = _restore(pipeline, backup.artifacts, [])
    assert {o.status for o in second.values()} <= {OutcomeStatus.UNCHANGED, OutcomeStatus.SKIPPED}
    assert statuses(list(second.values()))["unchanged"] == _objects(first)
    # the CRDs are compared one by one (few, and megabytes each); the rest came from the lists
    creates = [(r.resource, r.status) for r in dest.requests if r.verb == "create"]
    assert creates and {c for c in creates} == {("customresourcedefinitions", 409)}, creates
    assert dest.count(verb="update") == 0
    objects = [r for r in dest.requests if r.verb == "get" and r.name and r.resource != "customresourcedefinitions"]
    assert len(objects) <= 2, objects  # at most an owner's read (the Certificate of a Secret)
    listed = {r.resource for r in dest.requests if r.verb == "list"}
    assert {"configmaps", "secrets", "namespaces", "clusterqueues", "leaderworkersets"} <= listed


def test_a_listed_object_that_differs_is_read_not_created_and_is_a_conflict(pipeline, dest):
    backup = pipeline.backup()
    _restore(pipeline, backup.artifacts, [])
    core = kubernetes.client.CoreV1Api(dest.api_client())
    core.patch_namespaced_config_map("settings", "team-a", {"data": {"mode": "serve"}})
    dest.reset_requests()
    outcomes = _restore(pipeline, backup.artifacts, [])
    assert outcomes["configmaps/team-a/settings"].status == OutcomeStatus.CONFLICT
    assert "data.mode" in outcomes["configmaps/team-a/settings"].reason
    assert dest.count(verb="create", resource="configmaps") == 0
    assert [r.name for r in dest.requests if r.verb == "get" and r.resource == "configmaps"] == ["settings"]
    replaced = _restore(pipeline, backup.artifacts, [], overwrite=True)
    assert replaced["configmaps/team-a/settings"].status == OutcomeStatus.RESTORED
    assert core.read_namespaced_config_map("settings", "team-a").data == {"mode": "train"}


def test_an_object_deleted_after_the_list_is_created(pipeline, dest, monkeypatch):
    backup = pipeline.backup()
    _restore(pipeline, backup.artifacts, [])
    core = kubernetes.client.CoreV1Api(dest.api_client())
    core.patch_namespaced_config_map("settings", "team-a", {"data": {"mode": "serve"}})
    listed = applying.survey

    def then_deleted(api, rtype, expected):
        found = listed(api, rtype, expected)
        if rtype.plural == "configmaps":  # listed as differing, gone before its turn
            core.delete_namespaced_config_map("settings", "team-a")
        return found
    monkeypatch.setattr(applying, "survey", then_deleted)
    outcomes = _restore(pipeline, backup.artifacts, [])
    assert outcomes["configmaps/team-a/settings"].status == OutcomeStatus.RESTORED
    assert outcomes["configmaps/team-a/settings"].reason == "created"
    assert core.read_namespaced_config_map("settings", "team-a").data == {"mode": "train"}


def test_a_refused_list_goes_object_by_object_and_says_so(pipeline, dest):
    backup = pipeline.backup()
    _restore(pipeline, backup.artifacts, [])
    dest.reset_requests()
    dest.fail_next("/api/v1/configmaps", 403, verb="list")
    log: list[str] = []
    outcomes = _restore(pipeline, backup.artifacts, log)
    assert {o.status for o in outcomes.values()} <= {OutcomeStatus.UNCHANGED, OutcomeStatus.SKIPPED}
    said = [line for line in log if "configmaps" in line and "cannot list them" in line]
    assert said and "each object is created, and read and compared if it exists" in said[0], log
    configmaps = sum(1 for item in outcomes if item.startswith("configmaps/"))
    assert dest.count(verb="create", resource="configmaps", status=409) == configmaps
    assert dest.count(verb="create", resource="secrets") == 0


def test_a_list_past_its_bound_is_dropped(pipeline, dest, monkeypatch):
    backup = pipeline.backup()
    first = _restore(pipeline, backup.artifacts, [])
    configmaps = sum(1 for item in first if item.startswith("configmaps/"))
    monkeypatch.setattr(surveying, "FLOOR", 0)
    monkeypatch.setattr(surveying, "PAGE", 5)
    dest.create_objects([{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"other-{i}", "namespace": "team-a"}}
                         for i in range(4 * configmaps + 5)])
    log: list[str] = []
    outcomes = _restore(pipeline, backup.artifacts, log)
    assert {o.status for o in outcomes.values()} <= {OutcomeStatus.UNCHANGED, OutcomeStatus.SKIPPED}
    assert any(f"the destination holds over {4 * configmaps} of them" in line for line in log), log
