"""`dr status` and the audit judge a source's newest snapshot against its RPO with one function
(dr.audit.staleness.source_ages): they agree on what is stale."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from dr.audit.rpo_status import rpo_status
from dr.audit.staleness import source_ages, stale_findings
from dr.cli.exitcodes import Exit
from dr.cli.main import main
from dr.contract.registry import Registry
from dr.model.plan_loading import load_plan
from dr.repository.targets import open_target
from tests.cli.planfiles import files_source, local_target, write_plan


def test_status_and_audit_agree_on_staleness(tmp_path):
    (tmp_path / "cfg").mkdir()
    sources = (files_source("fresh", [str(tmp_path / "cfg")]).rstrip("\n") + "\n    rpo: 1d\n"
               + files_source("hourly", [str(tmp_path / "cfg")]).rstrip("\n") + "\n    rpo: 1h\n"
               + files_source("never", [str(tmp_path / "cfg")]).rstrip("\n") + "\n    rpo: 1d\n")
    path = write_plan(tmp_path / "plan.yaml", local_target(tmp_path / "repo"), sources)
    assert main(["backup", "--plan", path, "--source", "fresh", "--source", "hourly", "-q"]) == Exit.OK
    registry = Registry()
    plan = load_plan(path, registry)
    target = plan.primary_target()
    repo = open_target(plan, target)
    repo.open()
    later = datetime.now(timezone.utc) + timedelta(hours=2)

    ages = {a.source.name: a for a in source_ages(plan, repo.snapshots(), later)}
    assert {name for name, a in ages.items() if a.breach} == {"hourly", "never"}
    assert ages["never"].snapshot is None and ages["fresh"].age > timedelta(hours=2)

    status = rpo_status(plan, registry, target, now=later)
    assert {row["source"] for row in status.sources if row["breach"]} == {"hourly", "never"}
    assert status.breached
    stale = stale_findings(plan, target, repo.snapshots(), later)
    assert {f.reference for f in stale} == {"hourly", "never"}
