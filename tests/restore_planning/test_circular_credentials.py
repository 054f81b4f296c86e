"""The whole-plan restore's needs and the audit judge circular credentials alike (issue 25, item 4).

The credentials that read the backup, kept only inside that backup (a Secret read by dr's own
CronJob; a declared credentials_location or key_location that only the snapshot provides), are a
`credentials-circular` blocker in the audit; the restore plan of the same snapshot, in the same
failure scenario, must not call them "ok: the snapshot restores it".
"""

from __future__ import annotations

import pytest

from dr.model.recovery import BLOCKED, OK
from dr.planner.planning import plan_restore
from dr.repository.catalogs import read_catalog
from tests.audit import worlds
from tests.audit.conftest import World
from tests.audit.test_credentials_circular import DR_SECRET, KEY_SECRET, REMOTE, _contents, _dr_cronjob, _secrets


@pytest.fixture
def world(tmp_path) -> World:
    """The audit's world (a real repository with a planted snapshot), not restore planning's."""
    return World(tmp_path)


def _restore(world, plan, failed):
    artifacts = list(read_catalog(world.repo, world.snapshot.catalog))
    return plan_restore(plan, world.snapshot, artifacts, plan.target("dr-us"), failed=failed)


def _needs(restore_plan) -> dict[tuple[str, str], set]:
    """(kind, reference) -> the verdicts every step's needs give it."""
    found: dict[tuple[str, str], set] = {}
    for step in restore_plan.steps:
        for need in step.needs:
            found.setdefault((need.kind, need.reference), set()).add(need.verdict)
    return found


@pytest.mark.parametrize("failed", [["train-eu1"], ["eu-west-1"]])
def test_a_secret_read_by_drs_workload_is_a_blocker_in_the_audit_and_in_every_steps_needs(world, failed):
    world.backup(_contents(_dr_cronjob(), _secrets()))
    plan = world.plan(dr_image=worlds.DR_IMAGE_ECR, targets=[{"name": "dr-us", "url": REMOTE, "domain": "us-east-1"}])
    audit = world.audit(plan, failed=failed)
    [finding] = [f for f in audit.findings if f.code == "credentials-circular"]
    restore = _restore(world, plan, failed)
    needs = _needs(restore)
    # the audit's blocker is the restore's: for the credentials, of every step, and for the Secret itself
    assert (finding.severity, finding.reference) == ("blocker", DR_SECRET)
    assert needs[("credentials", DR_SECRET)] == {BLOCKED}
    assert needs[("secret", DR_SECRET)] == {BLOCKED}
    assert all(any(n.reference == DR_SECRET and n.verdict == BLOCKED for n in s.needs) for s in restore.steps)
    reason = next(n.reason for s in restore.steps for n in s.needs if (n.kind, n.reference) == ("secret", DR_SECRET))
    assert "circular" in reason and "CronJob/dr-system/dr-backup" in reason
    # another Secret of the same snapshot is still restored by it: only the circle is a blocker
    assert needs[("secret", "secret:dr-system/report-token")] == {OK}
    assert {s.status for s in restore.steps} == {"refused"}


def test_a_declared_location_only_the_snapshot_provides_is_a_blocker_in_both(world):
    world.backup(_contents(_secrets()))
    plan = world.plan(targets=[{"name": "dr-us", "url": world.repo_path, "domain": "us-east-1",
                                "credentials_location": DR_SECRET}],
                      encryption={"recipients": [worlds.RECIPIENT], "key_location": KEY_SECRET})
    audit = world.audit(plan, failed=["eu-west-1"])
    assert {(f.kind, f.reference, f.severity) for f in audit.findings if f.code == "credentials-circular"} == \
        {("credentials", DR_SECRET, "blocker"), ("key", KEY_SECRET, "blocker")}
    needs = _needs(_restore(world, plan, ["eu-west-1"]))
    assert needs[("credentials", DR_SECRET)] == {BLOCKED}


def test_where_nothing_failed_the_credentials_are_where_they_live(world):
    world.backup(_contents(_dr_cronjob(), _secrets()))
    plan = world.plan(dr_image=worlds.DR_IMAGE_ECR, targets=[{"name": "dr-us", "url": REMOTE, "domain": "us-east-1"}])
    needs = _needs(_restore(world, plan, []))
    assert ("credentials", DR_SECRET) not in needs
    assert needs[("secret", DR_SECRET)] == {OK}
