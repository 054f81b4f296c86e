"""Listing under load: pagination, 429 with Retry-After, 5xx, a hanging list; Kueue findings."""

from __future__ import annotations

import re
import time

import pytest

from dr.contract import ExportContext
from dr.exporters.kubernetes import KubernetesExporter
from dr.exporters.kubernetes.connecting import api_client, dynamic_client
from dr.exporters.kubernetes.discovering import served_types
from dr.exporters.kubernetes.requesting import Api, RequestTimeout


def test_lists_are_paginated(pipeline, source):
    source.reset_requests()
    backup = pipeline.backup(page_size=2)
    crds = len(source.list_objects("apiextensions.k8s.io/v1", "CustomResourceDefinition"))
    assert source.count(verb="list", resource="customresourcedefinitions", param="continue") == (crds + 1) // 2 - 1
    assert source.count(verb="list", resource="configmaps", param="continue") >= 1
    assert all(r.query.get("limit") == "2" for r in source.requests if r.verb == "list")
    whole = pipeline.backup(page_size=500)
    assert backup.identities() == whole.identities()
    # Page size changes nothing stored: same artifacts, same bytes.
    assert {a.identity: (a.size, a.digest, a.chunks if not a.encrypted else None) for a in backup.artifacts} == \
        {a.identity: (a.size, a.digest, a.chunks if not a.encrypted else None) for a in whole.artifacts}


def test_a_429_is_retried_after_the_time_retry_after_asks(pipeline, source):
    source.reset_requests()
    source.throttle_next("/api/v1/secrets", times=2, retry_after=1)
    started = time.monotonic()
    backup = pipeline.backup()
    assert time.monotonic() - started >= 2.0
    assert source.count(verb="list", path="/api/v1/secrets", status=429) == 2
    assert source.count(verb="list", path="/api/v1/secrets", status=200) == 1
    assert "secrets/team-a" in backup.identities()
    assert any("retrying" in line and "429" in line for line in backup.log)


def test_a_500_is_retried(pipeline, source):
    source.fail_next("/apis/kueue.x-k8s.io/v1beta2/clusterqueues", 503, times=1)
    assert "clusterqueues.kueue.x-k8s.io" in pipeline.backup().identities()


def test_a_list_that_hangs_past_the_timeout_fails_loudly_naming_the_resource(pipeline, source):
    source.hang_next("/api/v1/configmaps", 5)
    started = time.monotonic()
    with pytest.raises(RequestTimeout, match=r"list configmaps: no answer within 1 s"):
        pipeline.backup(list_timeout_seconds=1)
    assert time.monotonic() - started < 4.5, "the other lists must be cancelled, not awaited"


def _served(pipeline) -> set[str]:
    """What discovery itself says the source serves."""
    client = api_client(pipeline.kubeconfig, "source", pool_size=2)
    return {t.qualified for t in served_types(Api(dynamic_client(client, pipeline.root + "-discovery")))}


def _finding(backup, code: str) -> list[dict]:
    return [f for f in backup.findings if f["code"] == code]


def test_a_refused_list_is_an_error_finding_naming_the_type_and_the_rest_is_kept(pipeline, source):
    whole = pipeline.backup()
    source.fail_next("/api/v1/secrets", 403, times=1)
    backup = pipeline.backup()
    [refused] = _finding(backup, "kubernetes-list-failed")
    assert (refused["severity"], refused["type"], refused["status"]) == ("error", "secrets", 403)
    assert "secrets could not be listed" in refused["message"] and "403" in refused["message"]
    # the other types are all there; no Secret is, and the inventory does not count them as exported
    assert backup.identities() == {i for i in whole.identities() if not i.startswith("secrets/")}
    [served] = _finding(backup, "kubernetes-served-types")
    assert "secrets" not in served["exported"] and served["left_out"]["secrets"].startswith("listing failed: ")
    assert any(line.startswith("not exported: secrets: listing failed") for line in backup.log)


def test_a_list_failing_past_its_retries_is_a_finding_not_a_smaller_count(pipeline, source):
    source.fail_next("/apis/kueue.x-k8s.io/v1beta2/clusterqueues", 500, times=None)
    try:
        backup = pipeline.backup()
    finally:
        source.clear_faults()
    [failed] = _finding(backup, "kubernetes-list-failed")
    assert (failed["type"], failed["status"]) == ("clusterqueues.kueue.x-k8s.io", 500)
    assert "clusterqueues.kueue.x-k8s.io" not in backup.identities()
    assert "clusterqueues.kueue.x-k8s.io" not in _finding(backup, "kubernetes-served-types")[0]["exported"]


def test_a_group_version_whose_discovery_fails_is_named(pipeline, source):
    """An aggregated API whose backend is down answers 503: the kubernetes client's discoverer
    reads that as "no resources", a smaller backup in silence."""
    source.fail_next(re.compile(r"^/apis/kueue\.x-k8s\.io/v[^/]+$"), 503, times=None, verb="get")
    try:
        backup = pipeline.backup()
    finally:
        source.clear_faults()
    failed = _finding(backup, "kubernetes-discovery-failed")
    assert {f["severity"] for f in failed} == {"error"}
    assert "kueue.x-k8s.io/v1beta2" in {f["group_version"] for f in failed}
    assert not any(i.endswith(".kueue.x-k8s.io") for i in backup.identities())
    assert any(line.startswith("not discovered: kueue.x-k8s.io/v1beta2") for line in backup.log)


def test_every_served_type_is_printed_and_recorded_with_its_count_or_why_not(pipeline, source):
    backup = pipeline.backup()
    [served] = _finding(backup, "kubernetes-served-types")
    assert served["severity"] == "info"
    stored: dict[str, int] = {}
    for artifact in backup.artifacts:
        if artifact.kind == "kubernetes-objects":
            qualified = artifact.identity.split("/", 1)[0]
            stored[qualified] = stored.get(qualified, 0) + artifact.meta["objects"]
    assert {k: v for k, v in served["exported"].items() if v} == stored
    left_out = served["left_out"]
    assert left_out["workloads.kueue.x-k8s.io"].startswith("never exported: Kueue runtime state")
    assert "not a custom resource" in left_out["events"]
    assert set(served["exported"]) | set(left_out) == {t for t in _served(pipeline)}
    [line] = [line for line in backup.log if line.startswith("served types: ")]
    assert f"exported {len(served['exported'])} " in line and "configmaps (" in line


def test_kueue_missing_flavor_and_admission_check_are_findings(pipeline):
    findings = [f for f in pipeline.backup().findings if f["code"].startswith("kueue-")]
    codes = {(f["code"], f["referrer"], f["missing"]) for f in findings}
    assert ("kueue-flavor-missing", "ClusterQueue/spot-queue", "ResourceFlavor/spot-missing") in codes
    # Upstream's admin_minimal-cq.yaml names AdmissionCheck sample-prov-2, which no example defines.
    assert ("kueue-admission-check-missing", "ClusterQueue/cluster-queue-2", "AdmissionCheck/sample-prov-2") in codes
    assert not any(f["missing"] in ("ResourceFlavor/default-flavor", "AdmissionCheck/sample-prov") for f in findings)


def test_namespaces_option_limits_the_backup(pipeline, source):
    source.reset_requests()
    backup = pipeline.backup(namespaces=["team-a"])
    namespaced = {i.split("/", 1)[1] for i in backup.identities() if "/" in i}
    assert namespaced == {"team-a"}
    assert source.count(verb="list", path="/api/v1/namespaces/team-a/secrets") == 1
    namespaces = next(a for a in backup.artifacts if a.identity == "namespaces")
    assert namespaces.meta["provides"] == ["namespace:team-a"]


def test_discover_names_what_a_backup_writes(pipeline):
    exporter = KubernetesExporter(ExportContext("cluster", pipeline.options(), base_dir="/"))
    discovered = list(exporter.discover())
    assert {d.identity for d in discovered if d.kind == "kubernetes-objects"} == pipeline.backup().identities()
    assert all(d.detail.endswith("objects") for d in discovered if d.kind == "kubernetes-objects")
