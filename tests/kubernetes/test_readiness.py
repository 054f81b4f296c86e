"""The readiness checks (PDBs, serving HA, spot) on upstream Kueue and LWS objects and hand-written ones.

Each problem has an independent twin configured right, which must not be flagged: EXPECTED in
readiness_objects.py lists exactly what is flagged, so any twin flagged fails the test. The
end-to-end path (kmock, dr backup, dr audit --readiness) is tests/audit/test_readiness_audit.py.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from dr.exporters.kubernetes.options import KubernetesOptions
from dr.exporters.kubernetes.readiness import ReadinessCheck
from dr.exporters.kubernetes.readiness.codes import CODES
from dr.exporters.kubernetes.readiness.spot import provider
from dr.exporters.kubernetes.resources import ResourceType
from tests.audit.test_runbooks import SECTIONS
from tests.kubernetes import readiness_objects as objects

ROOT = Path(__file__).resolve().parents[2]
_PLURALS = {"PodDisruptionBudget": ("policy", "poddisruptionbudgets"), "ResourceFlavor": ("kueue.x-k8s.io", "resourceflavors"),
            "ClusterQueue": ("kueue.x-k8s.io", "clusterqueues"), "LocalQueue": ("kueue.x-k8s.io", "localqueues")}


def _findings(docs: list[dict], **readiness) -> list[dict]:
    check = ReadinessCheck(KubernetesOptions(readiness=readiness).readiness)
    for doc in docs:
        group, plural = _PLURALS.get(doc["kind"], ("other", doc["kind"].lower() + "s"))
        check.observe(ResourceType(group, "v1", plural, doc["kind"], True), doc)
    return list(check.findings())


def _flagged(docs: list[dict], **readiness) -> set[tuple[str, str]]:
    return {(f["code"], f["object"]) for f in _findings(docs, **readiness)}


def test_every_problem_is_flagged_and_no_twin_is():
    assert _flagged(objects.all_objects(), **objects.PLAN_READINESS) == objects.EXPECTED


def test_each_finding_carries_what_the_audit_and_status_need():
    for found in _findings(objects.all_objects(), **objects.PLAN_READINESS):
        code = CODES[found["code"]]
        assert (found["category"], found["check"], found["severity"]) == ("readiness", code.check, code.severity)
        assert found["runbook"] == f"runbooks/{found['code']}.md" and found["action"] == code.action
        assert found["object"] in found["message"]


def test_the_messages_say_why():
    found = {(f["code"], f["object"]): f for f in _findings(objects.all_objects(), **objects.PLAN_READINESS)}
    lws = found[("pdb-blocks-drain", "PodDisruptionBudget/serving/leaderworkerset-sample-budget")]
    assert (lws["allowed"], lws["pods"], lws["group_size"]) == (2, 12, 4) and "whole group" in lws["message"]
    assert found[("pdb-overlap", "Deployment/pdbs/shared")]["pdbs"] == [
        "PodDisruptionBudget/pdbs/shared-a", "PodDisruptionBudget/pdbs/shared-b"]
    assert "IfHealthyBudget" in found[("pdb-unhealthy-policy-missing", "PodDisruptionBudget/pdbs/policy")]["message"]
    short = found[("spot-grace-too-short", "Job/train/spot-naive")]
    assert (short["grace_seconds"], short["notice_seconds"], short["providers"]) == (30, 60, ["gke", "other"])
    assert "ResourceFlavor/spot" in short["message"] and "ResourceFlavor/gke-spot" in short["message"]
    assert found[("spot-grace-too-short", "Job/train/aws-short")]["notice_seconds"] == 120
    assert "allows 30 s" in found[("serving-startup-probe-short", "Deployment/serving/llm-short-startup")]["message"]
    assert "no preStop hook" in found[("serving-no-drain", "Deployment/serving/llm-no-prestop")]["message"]
    assert "terminationGracePeriodSeconds" in found[("serving-no-drain", "Deployment/serving/llm-default-grace")]["message"]
    assert "only tcpSocket" in found[("serving-readiness-tcp-only", "Deployment/serving/llm-tcp")]["message"]


def test_the_plan_options_decide_what_is_judged():
    docs = objects.all_objects()
    without_zones = _flagged(docs, **{**objects.PLAN_READINESS, "zones": False})
    assert ("serving-replicas-not-independent", "Deployment/serving/llm-packed") in without_zones  # soft on hosts
    zone_only = [d for d in objects.all_objects() if d["metadata"].get("name") == "llm-ok"]
    zone_only[0]["spec"]["template"]["spec"]["topologySpreadConstraints"] = objects.spread(objects.HOST)
    assert _flagged(zone_only, zones=False) == set()
    assert _flagged(zone_only, zones=True) == {("serving-replicas-not-independent", "Deployment/serving/llm-ok")}
    default_notice = _flagged(docs, serving=objects.PLAN_READINESS["serving"])
    assert ("spot-grace-too-short", "Job/train/spot-naive") not in default_notice  # 30 s grace, 30 s notice
    assert not any(code.startswith("serving") and "named-by-plan" in obj for code, obj in _flagged(docs))
    assert _flagged(docs, checks=["spot"]) == {f for f in objects.EXPECTED if f[0].startswith("spot")} - {
        ("spot-grace-too-short", "Job/train/spot-naive")}
    assert _flagged(docs, checks=[]) == set()
    assert _flagged(objects.all_objects(), model_load_seconds=20, **objects.PLAN_READINESS) == \
        objects.EXPECTED - {("serving-startup-probe-short", "Deployment/serving/llm-short-startup")}


def test_spot_labels_and_taints_name_their_provider():
    assert provider("cloud.google.com/gke-spot", "true") == "gke"
    assert provider("cloud.google.com/gke-preemptible", None) == "gke"
    assert provider("eks.amazonaws.com/capacityType", "SPOT") == "aws"
    assert provider("karpenter.sh/capacity-type", "on-demand") is None
    assert provider("kubernetes.azure.com/scalesetpriority", "spot") == "azure"
    assert provider("instance-type", "spot") == "other" and provider("spot", "true") == "other"
    assert provider("instance-type", "m5.large") is None and provider("spot-taint", None) is None


@pytest.mark.parametrize("code", sorted(CODES))
def test_every_readiness_code_has_a_runbook_listed_in_the_index(code):
    text = (ROOT / "runbooks" / f"{code}.md").read_text()
    assert re.findall(r"^## (.+)$", text, flags=re.M) == SECTIONS
    bodies = re.split(r"^## .+$", text, flags=re.M)[1:]
    assert all(len(body.split()) >= 20 for body in bodies)
    assert "dr audit --plan PLAN --readiness" in text
    assert f"({code}.md)" in (ROOT / "runbooks" / "README.md").read_text()
    assert f"`{code}`" in (ROOT / "docs" / "exporters" / "kubernetes.md").read_text()


def test_past_the_limit_per_code_the_rest_are_folded_into_one_finding(monkeypatch):
    import dr.exporters.kubernetes.readiness as readiness
    monkeypatch.setattr(readiness, "PER_CODE", 2)
    found = [f for f in _findings(objects.pdb_objects()) if f["code"] == "pdb-blocks-drain"]
    assert [f["object"] for f in found] == ["PodDisruptionBudget/pdbs/frozen", "PodDisruptionBudget/pdbs/full",
                                           "1 more objects"]
    assert found[-1]["more"] == 1 and "PodDisruptionBudget/pdbs/single" in found[-1]["message"]


def test_workloads_keep_only_the_pod_spec_fields_the_checks_read(monkeypatch):
    """A backup keeps every workload until its lists end: holding whole pod specs grew its memory
    with the object count. What is kept must still give every finding the whole spec gives."""
    from dr.exporters.kubernetes.readiness import workloads

    docs = objects.all_objects()
    check = ReadinessCheck(KubernetesOptions(readiness=objects.PLAN_READINESS).readiness)
    for doc in docs:
        group, plural = _PLURALS.get(doc["kind"], ("other", doc["kind"].lower() + "s"))
        check.observe(ResourceType(group, "v1", plural, doc["kind"], True), doc)
    templates = [t for w in check._workloads for t in w.templates]
    assert templates and all(set(t.spec) <= {*workloads.POD_FIELDS, "containers"} for t in templates)
    kept = [c for t in templates for c in t.spec.get("containers", [])]
    assert kept and all(set(c) <= set(workloads.CONTAINER_FIELDS) for c in kept)
    assert any("startupProbe" in c for c in kept) and any("topologySpreadConstraints" in t.spec for t in templates)
    trimmed = _findings(docs, **objects.PLAN_READINESS)
    monkeypatch.setattr(workloads, "read_fields", lambda pod_spec: pod_spec)
    assert trimmed == _findings(docs, **objects.PLAN_READINESS)
