"""The metrics of the scheduled maintenance (issue 30): dr prune publishes when it last applied the
retention, dr status when it last ran; the alerts' staleness rules read those. Prune waits for a
running holder of the lock with --lock-wait, as the rendered CronJob runs it."""

from __future__ import annotations

import threading

from dr.cli.exitcodes import Exit
from dr.cli.main import main
from dr.repository.locks import Lock
from dr.repository.repositories import Repository
from dr.repository.stores.local import LocalStore
from tests.metrics.plans import data_folder, files_plan
from tests.metrics.test_textfile import _parse


def _keeping_one(tmp_path, name: str) -> str:
    plan = files_plan(tmp_path, name, {"config": data_folder(tmp_path, "config")})
    with open(plan, encoding="utf-8") as handle:
        text = handle.read().replace("sources:\n", "retention: {keep_last: 1}\nsources:\n", 1)
    with open(plan, "w", encoding="utf-8") as handle:
        handle.write(text)
    return plan


def test_prune_publishes_what_it_forgot_and_when(tmp_path, capsys):
    plan = _keeping_one(tmp_path, "prune-file")
    for change in range(3):
        (tmp_path / "config" / "f0.yaml").write_text(f"changed {change}\n")
        assert main(["backup", "--plan", plan, "-q"]) == Exit.OK
    out = tmp_path / "prune.prom"
    assert main(["prune", "--plan", plan, "-q", "--metrics-file", str(out)]) == Exit.OK
    metrics = _parse(out)
    labels = (("plan", "prune-file"), ("target", "dr-site"))
    assert metrics["dr_prune_forgotten_snapshots"] == {labels: 2.0}
    assert metrics["dr_prune_removed_bytes"][labels] > 0
    assert metrics["dr_prune_last_success_timestamp_seconds"][labels] > 1.7e9


def test_a_dry_run_prune_refuses_metrics_options(tmp_path, capsys):
    plan = _keeping_one(tmp_path, "prune-dry")
    assert main(["prune", "--plan", plan, "--dry-run", "--metrics-file", str(tmp_path / "p.prom")]) == Exit.USAGE
    assert "--dry-run" in capsys.readouterr().err and not (tmp_path / "p.prom").exists()


def test_prune_waits_for_a_running_holder_with_lock_wait(tmp_path, capsys):
    plan = _keeping_one(tmp_path, "prune-wait")
    assert main(["backup", "--plan", plan, "-q"]) == Exit.OK
    repo = Repository(LocalStore(str(tmp_path / "repo")))
    holder = Lock(repo, exclusive=False, command="dr verify").acquire()
    assert main(["prune", "--plan", plan, "-q"]) == Exit.LOCKED
    threading.Timer(1.0, holder.release).start()
    assert main(["prune", "--plan", plan, "-q", "--lock-wait", "30"]) == Exit.OK


def test_status_publishes_when_it_ran(tmp_path, capsys):
    plan = files_plan(tmp_path, "status-ran", {"config": data_folder(tmp_path, "config")})
    out = tmp_path / "status.prom"
    assert main(["status", "--plan", plan, "-q", "--metrics-file", str(out)]) == Exit.RPO_BREACH
    [(labels, stamp)] = _parse(out)["dr_status_last_run_timestamp_seconds"].items()
    assert dict(labels) == {"plan": "status-ran", "target": "dr-site"} and stamp > 1.7e9
