"""What the backup noticed (the manifest's source findings) in the audit's reports and in dr status."""

from __future__ import annotations

import json
from datetime import datetime, timezone

from dr.audit.backup_findings import finding_object
from dr.audit.reports_html import render_html
from dr.audit.reports_json import render_json
from dr.audit.reports_md import render_markdown
from dr.audit.rpo_status import source_rows
from tests.audit.test_reports import documented_objects

FLAVOR = {"severity": "warning", "code": "kueue-flavor-missing",
          "message": "ClusterQueue team-a-cq names ResourceFlavor 'gpu-a100', which does not exist",
          "referrer": "ClusterQueue/team-a-cq", "missing": "ResourceFlavor/gpu-a100",
          "object": "ClusterQueue/team-a-cq", "action": "create ResourceFlavor 'gpu-a100' at the source"}
COPY_FAILED = {"severity": "error", "code": "checkpoint-copy-failed", "message": "tier hot: disk full",
               "path": "llama-ft/step-1000"}
NOTE = {"severity": "info", "code": "etcd-snapshot-same-version-only", "message": "restores to 3.5 only"}
RECORDED = {"platform-k8s": [FLAVOR], "checkpoints": [COPY_FAILED], "platform-git": [NOTE]}


def _backup_findings(report) -> dict[str, object]:
    return {f.backup["code"]: f for f in report.findings if f.code == "backup-finding"}


def test_each_recorded_finding_is_in_the_audit_with_code_severity_and_object(world):
    world.backup(findings=RECORDED)
    found = _backup_findings(world.audit())
    assert set(found) == {"kueue-flavor-missing", "checkpoint-copy-failed", "etcd-snapshot-same-version-only"}
    flavor = found["kueue-flavor-missing"]
    assert (flavor.severity, flavor.scenario, flavor.kind, flavor.reference, flavor.sources) == \
        ("warning", None, "kueue-flavor-missing", "ClusterQueue/team-a-cq", ["platform-k8s"])
    assert flavor.backup == {"source": "platform-k8s", "code": "kueue-flavor-missing", "severity": "warning",
                             "object": "ClusterQueue/team-a-cq"}
    assert flavor.action == FLAVOR["action"] and "gpu-a100" in flavor.message
    copy = found["checkpoint-copy-failed"]
    assert (copy.severity, copy.reference, copy.backup["severity"]) == ("warning", "llama-ft/step-1000", "error")
    note = found["etcd-snapshot-same-version-only"]
    assert (note.severity, note.reference, note.backup["object"]) == ("info", "platform-git", None)


def test_strict_makes_an_exporter_error_a_blocker_but_not_its_warnings(world):
    world.backup(findings=RECORDED)
    found = _backup_findings(world.audit(strict=True))
    assert found["checkpoint-copy-failed"].severity == "blocker"
    assert found["kueue-flavor-missing"].severity == "warning"


def test_a_snapshot_without_findings_adds_none(world):
    world.backup()
    assert not _backup_findings(world.audit())


def test_every_report_format_shows_them(world):
    world.backup(findings=RECORDED)
    report = world.audit()
    doc = json.loads(render_json(report))
    documented = documented_objects()
    [flavor] = [f for f in doc["findings"] if f["backup"] and f["backup"]["code"] == "kueue-flavor-missing"]
    assert set(flavor["backup"]) == documented["backup"]
    assert flavor["code"] == "backup-finding" and flavor["runbook"] == "runbooks/backup-finding.md"
    assert all(f["backup"] is None for f in doc["findings"] if f["code"] != "backup-finding")
    text = render_markdown(report)
    assert "recorded by the backup of source `platform-k8s`: `kueue-flavor-missing` (warning) on " \
           "`ClusterQueue/team-a-cq`" in text
    page = render_html(report, dot_program="/nonexistent/dot")  # the table is what matters here
    assert "<code>kueue-flavor-missing</code> (warning) on <code>ClusterQueue/team-a-cq</code>" in page
    assert "<code>checkpoint-copy-failed</code> (error)" in page


def test_credentials_in_a_recorded_object_are_redacted(world):
    leaky = {"severity": "error", "code": "git-export-failed", "message": "clone failed",
             "repository": "https://deploy:hunter2@git.example.com/p.git"}
    world.backup(findings={"platform-git": [leaky]})
    doc = render_json(world.audit())
    assert "hunter2" not in doc and "git.example.com/p.git" in doc


def test_the_object_comes_from_the_facts_exporters_use():
    assert finding_object({"object": "a", "referrer": "b"}) == "a"
    assert finding_object({"referrer": "ClusterQueue/cq"}) == "ClusterQueue/cq"
    assert finding_object({"identity": "data/x.bin", "message": "m"}) == "data/x.bin"
    assert finding_object({"message": "m", "kinds": ["Deployment"]}) == ""


def test_status_lists_the_newest_backups_findings_per_source(world):
    world.backup(findings=RECORDED)
    plan = world.plan()
    rows = {row["source"]: row for row in source_rows(plan, world.repo.snapshots(), datetime.now(timezone.utc))}
    assert rows["platform-k8s"]["findings"] == [
        {"code": "kueue-flavor-missing", "severity": "warning", "object": "ClusterQueue/team-a-cq",
         "message": FLAVOR["message"]}]
    assert rows["checkpoints"]["findings"][0]["severity"] == "error"
    world.backup()  # a newer backup without them: status follows the newest snapshot
    rows = {row["source"]: row for row in source_rows(plan, world.repo.snapshots(), datetime.now(timezone.utc))}
    assert all(row["findings"] == [] for row in rows.values())
