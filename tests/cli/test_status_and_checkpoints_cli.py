"""`dr status` and a checkpoint backup/restore through the command line, on real DCP saves."""

from __future__ import annotations

import json

from torch.distributed.checkpoint import FileSystemReader

from dr.cli.exitcodes import Exit
from dr.cli.main import main
from tests.checkpoints.test_exporter_helpers import assert_same_state, load_state, save_steps
from tests.cli.planfiles import files_source, local_target, write_plan


def _plan(tmp_path, rpo: str) -> str:
    source = (f"  - name: training\n    type: checkpoints\n    rpo: {rpo}\n"
              f"    roots: [\"{tmp_path / 'runs'}\"]\n    dr_copy: \"{tmp_path / 'dr-copy'}\"\n"
              "    settle_seconds: 0\n")
    return write_plan(tmp_path / "plan.yaml", local_target(tmp_path / "repo"),
                      files_source("config", [str(tmp_path / "runs")]).replace("rpo", "rpo") + source)


def test_status_flags_a_run_whose_newest_checkpoint_is_not_copied(tmp_path, capsys):
    saved = save_steps(tmp_path / "runs", "llama", [100, 200], single_file_per_rank=False)
    plan = _plan(tmp_path, "1h")
    assert main(["status", "--plan", plan, "--json"]) == Exit.RPO_BREACH  # nothing backed up yet
    capsys.readouterr()
    assert main(["backup", "--plan", plan, "-q"]) == Exit.OK
    capsys.readouterr()
    assert main(["status", "--plan", plan, "--json"]) == Exit.OK
    report = json.loads(capsys.readouterr().out)
    [run] = report["runs"]
    assert (run["run"], run["source_step"], run["copy_step"], run["rpo_seconds"]) == ("llama", 200, 200, 0.0)
    # a new checkpoint lands at the source; until it is copied the run lags by one step
    save_steps(tmp_path / "runs", "llama", [300], single_file_per_rank=False)
    assert main(["status", "--plan", plan, "--json"]) in (Exit.OK, Exit.RPO_BREACH)
    [run] = json.loads(capsys.readouterr().out)["runs"]
    assert (run["source_step"], run["copy_step"], run["behind"]) == (300, 200, 1)
    # restore a chosen step through the CLI flags and load it with torch
    assert main(["restore", "--plan", plan, "--source", "training", "--run", "llama", "--step", "100",
                 "--to", str(tmp_path / "back"), "-q"]) == Exit.OK
    assert_same_state(load_state(FileSystemReader(str(tmp_path / "back" / "llama" / "step-100"))), saved[100])


def test_remap_flags_need_a_source(tmp_path, capsys):
    plan = write_plan(tmp_path / "plan.yaml", local_target(tmp_path / "repo"), files_source("config", [str(tmp_path)]))
    assert main(["restore", "--plan", plan, "--run", "x"]) == Exit.USAGE
    assert "add --source" in capsys.readouterr().err
