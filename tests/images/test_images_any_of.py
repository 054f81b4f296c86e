"""Images copied to two DR registries: the audit and the restore planner judge them as one
any-of need (contract v2 restore_needs), met while either registry survives.

Real registries (tests/images/conftest.py): the platform's images in `source` (cluster-a), the
DR copies in `dr` (site-1) and in `dest` (site-2). Losing one DR site is not a blocker; losing
both is, and the finding names both registries.
"""

from __future__ import annotations

import json

import pytest
import yaml

from dr.audit import choose_audited_target, run_audit, scenarios_for
from dr.backup import run_backup
from dr.model.plan_loading import load_plan
from dr.planner.planning import planning_exporters
from dr.repository.targets import open_target
from dr.restore import prepare
from tests.images.conftest import REGISTRY


@pytest.fixture
def two_copies(tmp_path, registries, images):
    (tmp_path / "pods.json").write_text(json.dumps({"api": [images.api]}))
    first, second = f"{registries.dr.url}/anyof", f"{registries.dest.url}/anyof"
    data = {"version": 1, "name": "any-of",
            "failure_domains": [{"name": "cluster-a", "kind": "cluster"}, {"name": "site-1", "kind": "site"},
                                {"name": "site-2", "kind": "site"}, {"name": "vault-site", "kind": "site"}],
            "protects_against": ["site-1", "site-2"],
            "locations": [{"name": "platform", "domain": "cluster-a", "prefixes": [f"{registries.source.host}/"]},
                          {"name": "dr-1", "domain": "site-1", "prefixes": [registries.dr.url, f"{registries.dr.host}/"]},
                          {"name": "dr-2", "domain": "site-2",
                           "prefixes": [registries.dest.url, f"{registries.dest.host}/"]}],
            "targets": [{"name": "dr", "url": str(tmp_path / "repo"), "domain": "vault-site"}],
            "sources": [{"name": "pods", "type": "pods", "file": "pods.json"},
                        {"name": "images", "type": "images", "to": [first, second], "retry_wait_seconds": 0.01}]}
    (tmp_path / "plan.yaml").write_text(yaml.safe_dump(data))
    plan = load_plan(str(tmp_path / "plan.yaml"), REGISTRY)
    [result] = run_backup(plan, REGISTRY)
    assert not result.failed_sources, result
    return plan, (first, second)


def audit(plan, failed):
    scenarios = scenarios_for(plan, failed)
    target = choose_audited_target(plan, scenarios)
    repo = open_target(plan, target)
    return run_audit(plan, repo, target, scenarios, exporters=planning_exporters(plan, REGISTRY))


def images_step_needs(plan, failed):
    repo = open_target(plan, plan.target("dr"))
    prepared = prepare(plan, repo, plan.target("dr"), REGISTRY, failed=failed)
    step = next(s for s in prepared.restore_plan.steps if s.name == "images")
    return [n for n in step.needs if n.kind == "registry"]


def test_one_dr_registry_lost_is_not_a_blocker(two_copies):
    plan, (first, second) = two_copies
    report = audit(plan, ["site-1"])
    assert not [f for f in report.findings if f.code == "registry-in-failed-domain"], report.findings
    [judged] = [j for j in report.scenarios[0].judged if j.use.kind == "registry"]
    assert judged.verdict == "ok" and judged.use.reference == second  # the surviving copy is relied on
    [need] = images_step_needs(plan, ["site-1"])
    assert need.verdict == "ok" and need.reference == second


def test_both_dr_registries_lost_is_a_blocker_naming_both(two_copies):
    plan, (first, second) = two_copies
    report = audit(plan, ["site-1", "site-2"])
    [finding] = [f for f in report.findings if f.code == "registry-in-failed-domain"]
    assert finding.severity == "blocker" and finding.sources == ["images"]
    assert first in finding.message and second in finding.message
    assert "site-1" in finding.message and "site-2" in finding.message
    [need] = images_step_needs(plan, ["site-1", "site-2"])
    assert need.verdict == "blocker" and first in need.reason and second in need.reason


def test_without_the_exporters_each_registry_is_judged_alone(two_copies):
    """The one-by-one judging the any-of need replaces: one lost registry is a blocker."""
    plan, (first, second) = two_copies
    scenarios = scenarios_for(plan, ["site-1"])
    target = choose_audited_target(plan, scenarios)
    report = run_audit(plan, open_target(plan, target), target, scenarios)
    assert [f.reference for f in report.findings if f.code == "registry-in-failed-domain"] == [first]
