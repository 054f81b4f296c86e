"""Credentials and keys that only the snapshot holds: a blocker, explained as circular (issue 10)."""

from __future__ import annotations

from tests.audit import worlds
from tests.audit.conftest import flagged

DR_SECRET = "secret:dr-system/dr-bucket-writer"
KEY_SECRET = "secret:dr-system/age-identity"
REMOTE = "s3://dr-us-backups/platform"  # the plan's view; the audit reads the local repository


def _dr_cronjob(image: str = worlds.DR_IMAGE_ECR) -> tuple:
    """A kubernetes batch as the scan records it: dr's CronJob reads its credentials from a
    Secret; another CronJob of the same batch reads another Secret."""
    job = "CronJob/dr-system/dr-backup .spec.jobTemplate.spec.template.spec.containers[0]"
    other = "CronJob/dr-system/report .spec.jobTemplate.spec.template.spec.containers[0]"
    return ("kubernetes-objects", "cronjobs.batch/dr-system", [
        worlds.dep("image", image, f"{job}.image"),
        worlds.dep("secret", DR_SECRET, f"{job}.envFrom[0].secretRef"),
        worlds.dep("image", worlds.ECR_IMAGE, f"{other}.image"),
        worlds.dep("secret", "secret:dr-system/report-token", f"{other}.env[0].valueFrom")])


def _secrets() -> tuple:
    return ("kubernetes-objects", "secrets/dr-system", [],
            {"provides": [DR_SECRET, KEY_SECRET, "secret:dr-system/report-token"]})


def _contents(*extra) -> dict:
    contents = dict(worlds.PLANTED)
    contents["platform-k8s"] = contents["platform-k8s"] + list(extra)
    return contents


def _circular(report) -> list:
    return [f for f in report.findings if f.code == "credentials-circular"]


def test_credentials_read_by_drs_own_workload_with_no_other_copy_are_circular(world):
    world.backup(_contents(_dr_cronjob(), _secrets()))
    plan = world.plan(dr_image=worlds.DR_IMAGE_ECR, targets=[{"name": "dr-us", "url": REMOTE, "domain": "us-east-1"}])
    report = world.audit(plan)
    [finding] = _circular(report)
    assert (finding.severity, finding.scenario, finding.kind, finding.reference) == \
        ("blocker", None, "credentials", DR_SECRET)
    assert finding.examples == ["CronJob/dr-system/dr-backup"]  # not the other CronJob of the batch
    assert "circular" in finding.message and "credentials_location" in finding.action
    # one problem, counted once: no "credentials_location is not declared" warning besides it
    assert not [f for f in report.findings if f.code == "unknown-location" and f.kind == "credentials"]
    # a blocker whichever domain fails: the cluster alone, or its region
    assert report.blocked and {s.name for s in report.scenarios} == {"train-eu1", "eu-west-1"}


def test_a_surviving_credentials_location_is_not_circular(world):
    world.backup(_contents(_dr_cronjob(), _secrets()))
    plan = world.plan(dr_image=worlds.DR_IMAGE_ECR, targets=[
        {"name": "dr-us", "url": REMOTE, "domain": "us-east-1", "credentials_location": worlds.CREDS_SURVIVING}])
    report = world.audit(plan)
    assert not _circular(report)
    assert not [f for f in report.findings if f.kind == "credentials"]


def test_without_drs_workload_the_audit_only_says_it_cannot_tell(world):
    world.backup(_contents(_dr_cronjob(image=worlds.ECR_IMAGE), _secrets()))  # not dr's image
    plan = world.plan(dr_image=worlds.DR_IMAGE_ECR, targets=[{"name": "dr-us", "url": REMOTE, "domain": "us-east-1"}])
    report = world.audit(plan)
    assert not _circular(report)
    assert [f for f in report.findings if f.code == "unknown-location" and f.kind == "credentials"]


def test_a_declared_location_that_only_the_snapshot_provides_is_circular(world):
    world.backup(_contents(_secrets()))
    plan = world.plan(targets=[{"name": "dr-us", "url": world.repo_path, "domain": "us-east-1",
                                "credentials_location": DR_SECRET}],
                      encryption={"recipients": [worlds.RECIPIENT], "key_location": KEY_SECRET})
    report = world.audit(plan)
    found = {(f.kind, f.reference): f for f in _circular(report)}
    assert set(found) == {("credentials", DR_SECRET), ("key", KEY_SECRET)}
    assert found[("key", KEY_SECRET)].artifact == "platform-k8s/kubernetes-objects/secrets/dr-system"
    assert "private key" in found[("key", KEY_SECRET)].message
    assert not {("unknown-location", DR_SECRET), ("unknown-location", KEY_SECRET)} & flagged(report)


def test_a_location_placed_in_a_domain_is_judged_there_not_as_circular(world):
    """The snapshot may hold a copy of a Secrets Manager secret; the store itself survives."""
    world.backup(_contents(("secretsmanager-secret-value", "dr/backup-reader:value", [],
                            {"provides": [worlds.CREDS_SURVIVING]})))
    assert not _circular(world.audit())
