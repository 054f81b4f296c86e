"""dr.model.recovery and dr.audit give the same verdict for every dependency, in every case.

The restore planner judges with dr.model.recovery (it may not import dr.audit); the audit has
its own judging. Both follow the rules in dr.audit's docstring. This test runs both over the
audit's own planted platform (tests/audit/worlds) in each scenario and variant the audit tests
use, and compares every distinct dependency's verdict, so the two cannot drift apart.
"""

from __future__ import annotations

import os

import pytest

from dr.audit import choose_audited_target, run_audit, scenarios_for
from dr.model.plan_loading import load_plan
from dr.model.recovery import RecoveryJudge, copies_of, copies_survive, lost_domains
from dr.repository import layout
from dr.repository.catalogs import read_catalog
from tests.audit import worlds


def _plan(root, **changes):
    return load_plan(worlds.write_plan(root, worlds.plan_data(str(root / "repo"), **changes)))


def _compare(root, repo, snapshot, plan, failed):
    scenarios = scenarios_for(plan, failed)
    target = choose_audited_target(plan, scenarios)
    report = run_audit(plan, repo, target, scenarios)
    artifacts = list(read_catalog(repo, snapshot.catalog))
    copies = copies_of(artifacts)
    compared = 0
    for result in report.scenarios:
        lost = lost_domains(plan.domains, result.scenario.failed)
        assert lost == result.scenario.lost
        survive = copies_survive(plan, target, lost)
        assert survive == result.essentials.copies_survive
        judge = RecoveryJudge(plan, lost, copies, lambda c: all(repo.store.exists(layout.blob_key(d))
                                                                for d in c.chunks), survive)
        for judged in result.judged:
            mine = judge.judge(judged.use.reference)
            assert (judged.use.kind, judged.use.reference, mine.verdict) == \
                (judged.use.kind, judged.use.reference, judged.verdict)
            assert mine.placement.domain == judged.placement.domain
            assert (mine.copy.artifact if mine.copy else None) == \
                (judged.provider.artifact if judged.provider else None)
            compared += 1
    return compared


@pytest.fixture
def planted(tmp_path):
    repo = worlds.open_repo(str(tmp_path / "repo"))
    snapshot = worlds.backup(repo, worlds.PLANTED)
    return tmp_path, repo, snapshot


@pytest.mark.parametrize("failed", [["train-eu1"], ["eu-west-1"], ["prod"], ["github"], ["train-eu1", "github"],
                                    None])
def test_same_verdicts_in_every_scenario(planted, failed):
    root, repo, snapshot = planted
    assert _compare(root, repo, snapshot, _plan(root), failed) > 0


def test_same_verdicts_when_the_credentials_are_lost_with_the_cluster(planted):
    root, repo, snapshot = planted
    plan = _plan(root, targets=[{"name": "dr-us", "url": str(root / "repo"), "domain": "us-east-1",
                                 "credentials_location": worlds.CREDS_IN_CLUSTER}])
    assert _compare(root, repo, snapshot, plan, ["train-eu1"]) > 0


def test_same_verdicts_when_the_copy_is_missing_blobs(planted):
    root, repo, snapshot = planted
    provider = next(a for a in read_catalog(repo, snapshot.catalog) if a.identity == "declarations")
    for digest in provider.chunks:
        os.remove(os.path.join(str(root / "repo"), layout.blob_key(digest)))
    assert _compare(root, repo, snapshot, _plan(root), ["train-eu1"]) > 0


def test_same_verdicts_for_the_clean_platform(tmp_path):
    repo = worlds.open_repo(str(tmp_path / "repo"))
    snapshot = worlds.backup(repo, worlds.CLEAN)
    plan = _plan(tmp_path, sources=worlds.CLEAN_SOURCES)
    assert _compare(tmp_path, repo, snapshot, plan, ["eu-west-1"]) > 0
