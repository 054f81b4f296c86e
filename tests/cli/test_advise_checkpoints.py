"""`dr advise checkpoints` (check 2 of docs/readiness.md): real DCP saves whose files carry set
write times, backed up through the CLI, and the advice compared with figures computed by hand.

The saves of run `llama` at steps 100, 200, 300 each take 120 s (first file to `.metadata`) and
end 3600 s apart. With the plan's MTBF of 24 h, 8 GPUs at 2.50 a GPU-hour, by hand:
  advised interval  sqrt(2 x 86400 x 120) = sqrt(20 736 000)         = 4553.680 s
  lost per failure  now:     (3600/2 + 120) / 3600 x 8                = 4.267 GPU-hours (x 2.5 = 10.67)
                    advised: (4553.680/2 + 120) / 3600 x 8            = 5.3263 GPU-hours (x 2.5 = 13.32)
  lost per day      now:     (120/3600 + 1920/86400) x 24 x 8         = 10.667 GPU-hours (x 2.5 = 26.67)
                    advised: (120/4553.680 + 2396.840/86400) x 24 x 8 = 10.386 GPU-hours (x 2.5 = 25.96)
  milestone         100 steps / 3600 s x 86400 s                     = 2400 steps
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from dr.cli.exitcodes import Exit
from dr.cli.main import main
from tests.checkpoints.test_exporter_helpers import save_steps
from tests.cli.planfiles import local_target, write_plan

T0 = 1_780_000_000  # when the first save ended (any fixed time in the past)
SAVE, EVERY = 120, 3600


def _date(checkpoint: Path, end: float) -> None:
    """Data files written from end-SAVE on, the index last, at `end` (as DCP writes them)."""
    files = sorted(checkpoint.iterdir(), key=lambda f: f.name == ".metadata")
    for i, f in enumerate(files):
        t = end if f.name == ".metadata" else end - SAVE + i
        os.utime(f, (t, t))


def _plan(tmp_path: Path, readiness: str) -> str:
    source = (f"  - name: training\n    type: checkpoints\n    rpo: 6h\n"
              f"    roots: [\"{tmp_path / 'runs'}\"]\n    dr_copy: \"{tmp_path / 'dr-copy'}\"\n"
              "    settle_seconds: 0\n")
    return write_plan(tmp_path / "plan.yaml", local_target(tmp_path / "repo"), source + readiness)


def _backed_up(tmp_path: Path, capsys, readiness: str) -> str:
    save_steps(tmp_path / "runs", "llama", [100, 200, 300])
    for i, step in enumerate([100, 200, 300]):
        _date(tmp_path / "runs" / "llama" / f"step-{step}", T0 + i * EVERY)
    plan = _plan(tmp_path, readiness)
    assert main(["backup", "--plan", plan, "-q"]) == Exit.OK
    capsys.readouterr()
    return plan


def test_advice_equals_the_hand_computed_figures(tmp_path, capsys):
    plan = _backed_up(tmp_path, capsys, "readiness:\n  mtbf_hours: 24\n  gpus: 8\n  gpu_cost_per_hour: 2.5\n")
    assert main(["advise", "checkpoints", "--plan", plan, "--json"]) == Exit.OK
    [run] = json.loads(capsys.readouterr().out)["runs"]
    assert (run["run"], run["saves"], run["save_cost_seconds"]) == ("llama", 3, 120.0)
    assert run["current"] == {"interval_seconds": 3600.0, "lost_gpu_hours_per_failure": 4.267,
                              "wasted_gpu_hours_per_day": 10.667, "cost_per_failure": 10.67,
                              "cost_per_day": 26.67}
    assert run["advised"] == {"interval_seconds": 4553.68, "lost_gpu_hours_per_failure": 5.326,
                              "wasted_gpu_hours_per_day": 10.386, "cost_per_failure": 13.32,
                              "cost_per_day": 25.96}
    assert run["tiers"]["near"] == {"min_interval": "1h15m54s", "keep_last": 2}
    assert run["tiers"]["far"]["min_interval"] == "6h"  # the source's rpo
    assert run["tiers"]["milestone"] == {"step_multiple": 2400, "milestones_only": True}
    assert main(["advise", "checkpoints", "--plan", plan]) == Exit.OK
    text = capsys.readouterr().out
    assert "now      every 1h: 4.267 GPU-hours lost per failure (10.67)" in text
    assert "advised  every 1h15m54s: 5.326 GPU-hours lost per failure (13.32)" in text
    assert "sqrt(2 x MTBF x save cost)" in text


def test_a_run_override_and_a_run_filter(tmp_path, capsys):
    plan = _backed_up(tmp_path, capsys, "readiness:\n  mtbf_hours: 24\n  runs:\n"
                                        "    - {run: \"ll*\", mtbf_hours: 6, gpus: 2}\n")
    assert main(["advise", "checkpoints", "--plan", plan, "--run", "llama", "--json"]) == Exit.OK
    [run] = json.loads(capsys.readouterr().out)["runs"]
    # sqrt(2 x 21600 x 120) = 2276.840 s; lost per failure (2276.840/2 + 120)/3600 x 2 = 0.699
    assert (run["mtbf_hours"], run["gpus"]) == (6, 2)
    assert run["advised"]["interval_seconds"] == 2276.84 and run["advised"]["lost_gpu_hours_per_failure"] == 0.699
    assert "cost_per_failure" not in run["advised"]  # no price in the plan: no money figures
    assert main(["advise", "checkpoints", "--plan", plan, "--run", "other"]) == Exit.FAILURE
    assert "no training run matching other" in capsys.readouterr().err


def test_no_mtbf_is_a_plan_error_naming_the_field(tmp_path, capsys):
    plan = _backed_up(tmp_path, capsys, "")
    assert main(["advise", "checkpoints", "--plan", plan]) == Exit.USAGE
    captured = capsys.readouterr()
    assert "readiness.mtbf_hours is not set for run(s) llama" in captured.err
    assert "120" not in captured.err and "every 1h" in captured.out  # what was measured is still shown


def test_the_newest_save_says_whether_the_run_can_resume(tmp_path, capsys):
    plan = _backed_up(tmp_path, capsys, "readiness:\n  mtbf_hours: 24\n")
    assert main(["advise", "checkpoints", "--plan", plan]) == Exit.OK
    assert "  newest   step 300: resumable" in capsys.readouterr().out


def test_single_file_saves_have_no_save_cost_and_say_so(tmp_path, capsys):
    import torch

    from tests.checkpoints.writers import Trainer

    (tmp_path / "runs" / "bert").mkdir(parents=True)
    for i, step in enumerate([10, 20]):
        path = tmp_path / "runs" / "bert" / f"step-{step}.pt"
        torch.save(Trainer().state(), path)
        os.utime(path, (T0 + i * EVERY, T0 + i * EVERY))
    plan = _plan(tmp_path, "readiness:\n  mtbf_hours: 24\n")
    assert main(["backup", "--plan", plan, "-q"]) == Exit.OK
    capsys.readouterr()
    assert main(["advise", "checkpoints", "--plan", plan]) == Exit.PARTIAL
    out = capsys.readouterr().out
    assert "save cost unknown" in out and "now      every 1h" in out and "advised  unknown" in out
    assert "2 of 2 saves have no measurable duration" in out and "no save duration measured" in out
