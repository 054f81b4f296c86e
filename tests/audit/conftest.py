"""Fixtures for the audit tests: a real repository in tmp_path and the plan that describes it."""

from __future__ import annotations

from datetime import datetime

import pytest

from dr.audit import choose_audited_target, run_audit, scenarios_for
from dr.audit.audits import AuditReport
from dr.model.plan_loading import load_plan
from dr.model.plans import Plan
from tests.audit import worlds


class World:
    def __init__(self, root):
        self.root = root
        self.repo_path = str(root / "repo")
        self.repo = worlds.open_repo(self.repo_path)
        self.snapshot = None

    def backup(self, contents=None, findings=None):
        self.snapshot = worlds.backup(self.repo, worlds.PLANTED if contents is None else contents,
                                      findings=findings)
        return self.snapshot

    def plan_path(self, **changes) -> str:
        return worlds.write_plan(self.root, worlds.plan_data(self.repo_path, **changes))

    def plan(self, **changes) -> Plan:
        return load_plan(self.plan_path(**changes))

    def audit(self, plan: Plan | None = None, failed=None, strict=False, now: datetime | None = None,
              target: str | None = None, snapshot: str = "latest") -> AuditReport:
        plan = plan or self.plan()
        scenarios = scenarios_for(plan, failed)
        chosen = choose_audited_target(plan, scenarios, target)
        return run_audit(plan, self.repo, chosen, scenarios, snapshot_ref=snapshot, strict=strict, now=now)


@pytest.fixture
def world(tmp_path) -> World:
    return World(tmp_path)


@pytest.fixture
def planted(world) -> World:
    world.backup()
    return world


def flagged(report: AuditReport, scenario: str | None = "*") -> set[tuple[str, str]]:
    """(code, reference) of every finding, in one scenario (None: scenario-independent)."""
    return {(f.code, f.reference) for f in report.findings if scenario == "*" or f.scenario == scenario}
