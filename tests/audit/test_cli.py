"""`dr audit` through dr's real entry point: arguments, output, exit codes."""

from __future__ import annotations

import json

import pytest

from dr.cli.exitcodes import Exit
from dr.cli.main import main
from tests.audit import worlds


@pytest.fixture
def dr():
    """dr's main(): `audit` is one of the commands in its registry."""
    return main


def test_blockers_exit_4_with_a_markdown_report_on_stdout(dr, planted, capsys):
    code = dr(["audit", "--plan", planted.plan_path(), "--failed", "train-eu1"])
    out, err = capsys.readouterr()
    assert code == Exit.BLOCKERS == 4
    assert out.startswith("# DR audit of plan `ml-platform`: BLOCKED")
    assert "image-in-failed-domain" in out and "runbooks/image-in-failed-domain.md" in out
    assert "BLOCKED" in err  # the summary line goes to stderr


def test_clean_platform_exits_0(dr, world, capsys):
    world.backup(worlds.CLEAN)
    code = dr(["audit", "--plan", world.plan_path(dr_image=worlds.DR_IMAGE_ECR, sources=worlds.CLEAN_SOURCES)])
    out, _ = capsys.readouterr()
    assert code == Exit.OK, out
    assert "recoverable" in out


def test_unknown_failed_domain_is_a_usage_error_naming_the_nearest(dr, planted, capsys):
    code = dr(["audit", "--plan", planted.plan_path(), "--failed", "eu-west1"])
    _, err = capsys.readouterr()
    assert code == Exit.USAGE
    assert "no failure domain 'eu-west1'" in err and "did you mean 'eu-west-1'" in err


def test_unknown_target_is_a_usage_error(dr, planted, capsys):
    code = dr(["audit", "--plan", planted.plan_path(), "--target", "nope"])
    assert code == Exit.USAGE
    assert "targets: dr-us" in capsys.readouterr().err


def test_strict_turns_an_unplaced_reference_into_a_blocker(dr, world):
    world.backup({"platform-k8s": [("job", "ingest", [worlds.dep("dataset", worlds.UNPLACED)])]})
    plan = world.plan_path(dr_image=worlds.DR_IMAGE_ECR,
                           sources=[{"name": "platform-k8s", "type": "kubernetes", "rpo": "1h"}])
    assert dr(["audit", "--plan", plan, "-q"]) == Exit.OK
    assert dr(["audit", "--plan", plan, "--strict", "-q"]) == Exit.BLOCKERS


def test_json_report_written_to_a_file(dr, planted, tmp_path, capsys):
    path = tmp_path / "reports" / "audit.json"
    code = dr(["audit", "--plan", planted.plan_path(), "--json", "--out", str(path)])
    out, _ = capsys.readouterr()
    # stdout still carries one JSON document (docs/json.md): where the report went
    assert code == Exit.BLOCKERS and json.loads(out) == {"schema_version": 1, "written": str(path),
                                                          "document": "report"}
    document = json.loads(path.read_text())
    assert document["schema_version"] == 1 and document["summary"]["blocked"] is True
    assert [s["name"] for s in document["scenarios"]] == ["train-eu1", "eu-west-1"]


def test_global_json_flag_selects_the_json_format(dr, planted, capsys):
    code = dr(["audit", "--plan", planted.plan_path(), "--failed", "train-eu1", "--json"])
    assert code == Exit.BLOCKERS
    assert json.loads(capsys.readouterr().out)["plan"]["name"] == "ml-platform"


def test_html_report_and_a_snapshot_by_id_prefix(dr, planted, tmp_path):
    path = tmp_path / "audit.html"
    code = dr(["audit", "--plan", planted.plan_path(), "--snapshot", planted.snapshot.id[:10],
               "--format", "html", "--out", str(path), "-q"])
    assert code == Exit.BLOCKERS
    text = path.read_text()
    assert text.startswith("<!DOCTYPE html>") and planted.snapshot.id[:8] in text


def test_unknown_snapshot_fails_with_exit_1(dr, planted, capsys):
    assert dr(["audit", "--plan", planted.plan_path(), "--snapshot", "ffffffff"]) == Exit.FAILURE
    assert "no snapshot" in capsys.readouterr().err
