"""--metrics-file: the node-exporter textfile format, parsed back with prometheus_client's own
parser; written atomically; a failed run keeps the last success; never fails the command."""

from __future__ import annotations

import json
import os
import shutil

from prometheus_client.parser import text_string_to_metric_families

from dr.cli.exitcodes import Exit
from dr.cli.main import main
from dr.metrics import METRICS
from tests.metrics.plans import data_folder, files_plan


def _parse(path) -> dict[str, dict[tuple, float]]:
    """{metric: {sorted label items: value}}, through the Prometheus client's text parser."""
    with open(path, encoding="utf-8") as handle:
        families = text_string_to_metric_families(handle.read())
        return {f.name: {tuple(sorted(s.labels.items())): s.value for s in f.samples} for f in families}


def _source(metric: dict[tuple, float], source: str) -> float:
    [value] = [v for k, v in metric.items() if dict(k)["source"] == source]
    return value


def test_a_backup_writes_every_backup_metric_with_the_values_it_printed(tmp_path, capsys):
    folders = {"config": data_folder(tmp_path, "config"), "models": data_folder(tmp_path, "models")}
    plan = files_plan(tmp_path, "textfile", folders, schedule="0 9 * * 1-5")
    out = tmp_path / "collector" / "dr-backup.prom"
    os.makedirs(out.parent)
    assert main(["backup", "--plan", plan, "--json", "--metrics-file", str(out)]) == Exit.OK
    result = json.loads(capsys.readouterr().out)["results"][0]
    metrics = _parse(out)
    assert set(metrics) == {m.name for m in METRICS.values() if m.command == "backup"} - \
        {"dr_backup_last_failure_timestamp_seconds"}
    assert os.listdir(out.parent) == ["dr-backup.prom"]  # the temporary file was renamed, not left
    labels = (("plan", "textfile"), ("source", "config,models"), ("target", "dr-site"))
    for metric, stat in (("dr_backup_read_bytes", "bytes_read"), ("dr_backup_uploaded_bytes", "bytes_uploaded"),
                         ("dr_backup_uploaded_blobs", "blobs_uploaded"), ("dr_backup_reused_bytes", "bytes_reused"),
                         ("dr_backup_duration_seconds", "duration_seconds")):
        assert metrics[metric] == {labels: float(result["stats"][stat])}, metric
    assert metrics["dr_backup_read_bytes"][labels] > 0
    for source in result["sources"]:
        assert _source(metrics["dr_backup_artifacts"], source["name"]) == source["artifacts"]
        assert _source(metrics["dr_backup_success"], source["name"]) == 1.0
    # a weekday-mornings schedule: its longest gap is the weekend, Friday 09:00 to Monday 09:00
    assert set(metrics["dr_backup_schedule_interval_seconds"].values()) == {72 * 3600.0}
    assert {dict(k)["severity"] for k in metrics["dr_backup_findings"]} == {"error", "warning", "info"}
    # a fresh registry per run: nothing of dr's lands in the client library's global one
    from prometheus_client import REGISTRY

    assert not [m.name for m in REGISTRY.collect() if m.name.startswith("dr_")]


def test_a_failed_run_keeps_the_last_success_of_the_previous_file(tmp_path, capsys):
    folders = {"config": data_folder(tmp_path, "config"), "models": data_folder(tmp_path, "models")}
    plan = files_plan(tmp_path, "carry", folders)
    out = tmp_path / "dr.prom"
    assert main(["backup", "--plan", plan, "-q", "--metrics-file", str(out)]) == Exit.OK
    before = _parse(out)["dr_backup_last_success_timestamp_seconds"]
    shutil.rmtree(folders["models"])
    assert main(["backup", "--plan", plan, "-q", "--metrics-file", str(out)]) == Exit.PARTIAL
    after = _parse(out)
    assert _source(after["dr_backup_success"], "models") == 0.0
    assert _source(after["dr_backup_last_success_timestamp_seconds"], "models") == _source(before, "models")
    assert _source(after["dr_backup_last_failure_timestamp_seconds"], "models") >= _source(before, "models")
    assert _source(after["dr_backup_last_success_timestamp_seconds"], "config") >= _source(before, "config")
    assert [dict(k)["source"] for k in after["dr_backup_last_failure_timestamp_seconds"]] == ["models"]


def test_a_file_that_cannot_be_written_is_a_warning_not_a_failed_backup(tmp_path, capsys):
    plan = files_plan(tmp_path, "unwritable", {"config": data_folder(tmp_path, "config")})
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("a file where a folder should be")
    assert main(["backup", "--plan", plan, "--metrics-file", str(blocked / "dr.prom")]) == Exit.OK
    err = capsys.readouterr().err
    assert f"warning: metrics not written to {blocked / 'dr.prom'}:" in err


def test_status_writes_rpo_age_against_the_objective(tmp_path, capsys):
    plan = files_plan(tmp_path, "status-file", {"config": data_folder(tmp_path, "config")}, rpo="1h")
    out = tmp_path / "status.prom"
    assert main(["status", "--plan", plan, "-q", "--metrics-file", str(out)]) == Exit.RPO_BREACH  # never backed up
    never = _parse(out)
    assert "dr_rpo_age_seconds" not in never and list(never["dr_rpo_breach"].values()) == [1.0]
    assert main(["backup", "--plan", plan, "-q"]) == Exit.OK
    assert main(["status", "--plan", plan, "-q", "--metrics-file", str(out)]) == Exit.OK
    metrics = _parse(out)
    assert list(metrics["dr_rpo_breach"].values()) == [0.0]
    assert 0 <= list(metrics["dr_rpo_age_seconds"].values())[0] < 3600
    assert list(metrics["dr_rpo_objective_seconds"].values()) == [3600.0]


def test_drill_history_refuses_metrics_options(tmp_path, capsys):
    plan = files_plan(tmp_path, "history", {"config": data_folder(tmp_path, "config")})
    code = main(["drill", "--plan", plan, "--history", "--metrics-file", str(tmp_path / "d.prom")])
    assert code == Exit.USAGE and "drop them with --history" in capsys.readouterr().err


def test_a_source_without_a_schedule_is_named_as_unwatched(tmp_path, capsys):
    plan = files_plan(tmp_path, "unscheduled", {"config": data_folder(tmp_path, "config")})
    with open(plan, encoding="utf-8") as handle:
        text = handle.read().replace('    schedule: "0 * * * *"\n', "")
    with open(plan, "w", encoding="utf-8") as handle:
        handle.write(text)
    out = tmp_path / "dr.prom"
    assert main(["backup", "--plan", plan, "--metrics-file", str(out)]) == Exit.OK
    assert "no schedule in the plan for config" in capsys.readouterr().err
    assert "dr_backup_schedule_interval_seconds" not in _parse(out)


def test_a_previous_file_that_is_not_metrics_is_a_warning_and_left_alone(tmp_path, capsys):
    plan = files_plan(tmp_path, "garbled", {"config": data_folder(tmp_path, "config")})
    out = tmp_path / "dr.prom"
    out.write_text("this is { not the text format\n")
    assert main(["backup", "--plan", plan, "-q", "--metrics-file", str(out)]) == Exit.OK
    assert f"warning: metrics not written to {out}:" in capsys.readouterr().err
    assert out.read_text() == "this is { not the text format\n"
