"""`dr drill --training` (issue 28): real training with PyTorch DCP on CPU (gloo, torchrun), the
shipped example loop (dr/training/examples/plain_pytorch.py), backed up by the checkpoints exporter
through the CLI, then resumed from its DR copy at other world sizes.

The failed runs: world size 2, a save every 10 steps, an abrupt exit after step 25 (the failure),
their progress logs kept as the oracle. run-a saves the full training state; run-b leaves the
optimizer out, run-c the data loader's position. A resume at world size 1 and 3 reshards run-a's
step 20 and must repeat steps 21-25 of the failed run exactly (learning rates, sample ids) and
within the plan's tolerance (losses: float sums in another order); run-b's resume must fail the
loss check naming the optimizer, run-c's the data-order check naming the sampler.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from dr.cli.exitcodes import Exit
from dr.cli.main import main
from dr.training.examples import plain_pytorch
from tests.cli.planfiles import local_target, write_plan

EXAMPLE = Path(plain_pytorch.__file__)
STEP_SECONDS = "0.05"  # a stand-in for a real model's compute: it, not the tiny model, sets the rate
TORCHRUN = [sys.executable, "-m", "torch.distributed.run", "--standalone"]
RESTARTING = TORCHRUN + ["--max-restarts", "1", "--monitor-interval", "0.1"]


def _train(root: Path, run: str, log: Path, *without: str) -> None:
    """The failed run: world size 2, saves at 10 and 20, dies after step 25."""
    argv = TORCHRUN + ["--nproc-per-node", "2", str(EXAMPLE), "--root", str(root / run), "--steps", "40",
                       "--save-every", "10", "--fail-at", "25", "--step-seconds", STEP_SECONDS]
    for part in without:
        argv += ["--without", part]
    env = {**os.environ, "DR_PROGRESS_FILE": str(log), "OMP_NUM_THREADS": "1"}
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode != 0, "the failed run was meant to die at step 25"
    assert (root / run / "step-20" / ".metadata").is_file(), done.stderr[-2000:]


def _resume(run: str, log: Path, steps: int = 10) -> str:
    command = RESTARTING + ["--nproc-per-node", "{world_size}", str(EXAMPLE), "--root", "{checkpoint}-resumed",
                          "--steps", "40", "--resume", "{checkpoint}", "--step-seconds", STEP_SECONDS]
    return (f"    - run: {run}\n      gpus: 8\n      gpu_cost_per_hour: 2.5\n      resume:\n"
            f"        command: {json.dumps(command)}\n        env: {{OMP_NUM_THREADS: \"1\"}}\n"
            f"        steps: {steps}\n        time_limit: 2m\n        failed_log: \"{log}\"\n"
            f"        tolerance: 0.00001\n")


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("training")
    runs = tmp / "runs"
    logs = {run: tmp / f"{run}.progress.jsonl" for run in ("run-a", "run-b", "run-c")}
    _train(runs, "run-a", logs["run-a"])
    _train(runs, "run-b", logs["run-b"], "optimizer")
    _train(runs, "run-c", logs["run-c"], "dataloader")
    source = (f"  - name: training\n    type: checkpoints\n    rpo: 1h\n    roots: [\"{runs}\"]\n"
              f"    dr_copy: \"{tmp / 'dr-copy'}\"\n    settle_seconds: 0\n")
    placed = f"locations:\n  - {{name: dr-copies, domain: region-b, prefixes: [\"{tmp / 'dr-copy'}\"]}}\n"
    readiness = "readiness:\n  runs:\n" + "".join(_resume(run, log) for run, log in logs.items())
    readiness += "restore:\n  rto: {requeue: 2m, image_bytes: 2GiB, throughput: 100MiB/s}\n"
    plan = write_plan(tmp / "plan.yaml", local_target(tmp / "repo"), source + placed + readiness)
    assert main(["backup", "--plan", plan, "-q"]) == Exit.OK
    return {"plan": plan, "tmp": tmp, "logs": logs}


def _documented_keys() -> set[str]:
    text = (Path(__file__).resolve().parents[2] / "docs" / "json.md").read_text()
    row = re.search(r"^\| `dr drill --training RUN` \| (.+) \|$", text, flags=re.M)
    return set(re.findall(r"`(\w+)`", row.group(1))) | {"schema_version"}


def _drill(trained, capsys, run: str, *more: str) -> tuple[int, dict]:
    capsys.readouterr()
    code = main(["drill", "--plan", trained["plan"], "--training", run, "--failed", "cluster-a",
                 "--to", str(trained["tmp"] / f"scratch-{run}-{'-'.join(more)}"), "--json", *more])
    return code, json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("world_size", ["1", "3"])
def test_a_full_training_state_resumes_resharded_and_repeats_the_failed_runs_steps(trained, capsys, world_size):
    code, record = _drill(trained, capsys, "run-a", "--world-size", world_size)
    t = record["training"]
    assert t["checkpoint"]["step"] == 20 and t["checkpoint"]["resume"] == "resumable"
    assert "survives" in t["copy"]["why"] and "region-b" in t["copy"]["why"]
    checks = {c["check"]: c for c in t["checks"]}
    assert all(c["ok"] is True for c in checks.values()), checks
    assert "5 steps" in checks["lr-continues"]["detail"] and "5 steps" in checks["data-order"]["detail"]
    phases = {p["phase"]: p for p in t["phases"]}
    for name in ("checkpoint_download", "process_group_ready", "load_and_reshard", "first_step"):
        assert phases[name]["measured"] is True and phases[name]["seconds"] >= 0, phases[name]
    assert phases["requeue_and_scale_up"]["measured"] is False and phases["requeue_and_scale_up"]["how"]
    # what a local drill cannot see comes from the plan's restore.rto, labelled an estimate
    assert phases["requeue_and_scale_up"]["estimated_seconds"] == 120.0
    assert phases["image_warmup"]["estimated_seconds"] == pytest.approx(2048 / 100)
    assert "estimate" in phases["image_warmup"]["estimate_basis"] and "estimated_seconds" not in phases["failure_detection"]
    if record["rto"]["total_seconds"]:
        assert t["rto_with_estimates_seconds"] == pytest.approx(record["rto"]["total_seconds"] + 120 + 20.48, abs=0.01)
    assert all("measured" in p for p in t["phases"])
    # the baseline is the failed run's own rate; steady is reached, or the record says why not
    assert t["baseline"]["how"] == "the failed run's rate before the failure"
    steady = phases["steady_throughput"]
    assert (code, record["result"]) == ((Exit.OK, "recovered") if steady["measured"] else (Exit.PARTIAL, "partial"))
    assert t["process"]["stopped"] == "steps reached" and t["process"]["steps_after_load"] >= 10
    assert not _left_running(trained["tmp"]), "a trainer outlived the drill"
    # RPO: steps 21-25 were lost; 8 GPUs for that long, at 2.5 a GPU-hour
    rpo = t["rpo"]
    assert rpo["measured"] and rpo["steps"] == 5 and rpo["gpus"] == 8
    assert rpo["gpu_hours"] == pytest.approx(8 * rpo["seconds"] / 3600, abs=1e-4)
    assert set(record) == _documented_keys()  # docs/json.md's row (the fixture plan of its own test has no run)
    assert main(["drill", "--plan", trained["plan"], "--history", "--json"]) == Exit.OK
    shown = json.loads(capsys.readouterr().out)
    assert any(r["id"] == record["id"] and r["kind"] == "training" for r in shown["drills"])
    assert shown["trend"]["training_drills"] >= 1 and shown["trend"]["drills"] == 0  # not mixed into the restores'
    page = trained["tmp"] / f"history-{world_size}.html"
    assert main(["drill", "--plan", trained["plan"], "--history", "--format", "html", "--out", str(page)]) == Exit.OK
    html = page.read_text()
    assert "Measured RTO of training per phase" in html and 'aria-label="measured RTO of training per phase"' in html
    assert "load_and_reshard" in html and "at world size " + world_size in html


def test_a_checkpoint_without_its_optimizer_fails_the_loss_check_naming_it(trained, capsys):
    metrics = trained["tmp"] / "training.prom"
    code, record = _drill(trained, capsys, "run-b", "--world-size", "2", "--metrics-file", str(metrics))
    # its own series, apart from the restore drills' dr_drill_* of the same scenario
    text = metrics.read_text()
    assert ('dr_training_drill_continuity_failures{plan="test",run="run-b",scenario="cluster-a",target="dr-site",'
            'world_size="2"} 1') in text
    assert "dr_training_drill_rpo_steps" in text and "dr_drill_rto_total_seconds" not in text
    checks = {c["check"]: c for c in record["training"]["checks"]}
    assert code == Exit.FAILURE and record["result"] == "failed"
    assert checks["loss-repeats"]["ok"] is False and "optimizer" in checks["loss-repeats"]["state"]
    assert "missing optimizer" in checks["loss-repeats"]["detail"]  # what the checkpoint's index said
    assert checks["loss-repeats"]["code"] == "resume-loss-diverged"
    # the rest came back: the step, the schedule and the data order
    assert checks["first-step-follows"]["ok"] and checks["lr-continues"]["ok"] and checks["data-order"]["ok"]


def test_a_checkpoint_without_its_sampler_position_fails_the_data_order_check(trained, capsys):
    code, record = _drill(trained, capsys, "run-c", "--world-size", "3")
    checks = {c["check"]: c for c in record["training"]["checks"]}
    assert code == Exit.FAILURE
    assert checks["data-order"]["ok"] is False and "sampler" in checks["data-order"]["state"]
    assert checks["no-sample-repeated"]["ok"] is False  # the epoch started over: samples seen twice
    assert "missing dataloader" in checks["data-order"]["detail"]


def test_a_drill_refuses_when_every_copy_is_lost_and_says_which(trained, capsys):
    capsys.readouterr()
    code = main(["drill", "--plan", trained["plan"], "--training", "run-a", "--failed", "region-b",
                 "--to", str(trained["tmp"] / "scratch-lost")])
    err = capsys.readouterr().err
    assert code == Exit.USAGE
    assert "every DR copy is lost" in err and "tier" in err and "Traceback" not in err


def test_a_run_the_plan_cannot_resume_is_named_with_the_field_to_add(trained, capsys):
    capsys.readouterr()
    code = main(["drill", "--plan", trained["plan"], "--training", "run-z", "--failed", "cluster-a",
                 "--to", str(trained["tmp"] / "scratch-z")])
    err = capsys.readouterr().err
    assert code == Exit.USAGE and "readiness.runs" in err and "resume" in err and "run-z" in err


def test_a_failure_drill_kills_a_rank_and_times_the_restart_chain(trained, capsys):
    code, record = _drill(trained, capsys, "run-a", "--world-size", "2", "--kill-rank", "1", "--at-step", "24")
    t = record["training"]
    assert t["failure"]["killed"].startswith("rank 1 (pid ") and "SIGKILL at step 24" in t["failure"]["killed"]
    phases = {p["phase"]: p for p in t["phases"]}
    # detection from torchrun's own log line (the worker's failure), then termination and restart
    for name in ("failure_detection", "termination_and_restart", "process_group_ready", "load_and_reshard",
                 "first_step"):
        assert phases[name]["measured"] is True and phases[name]["seconds"] >= 0, phases[name]
    assert phases["failure_detection"]["seconds"] < 5  # --monitor-interval 0.1
    checks = {c["check"]: c for c in t["checks"]}
    # the restarted workers reload step 20 and repeat 21-24, which the killed run logged: the oracle
    assert checks["loaded-step"]["ok"] and checks["first-step-follows"]["ok"]
    assert checks["data-order"]["ok"] and checks["loss-repeats"]["ok"] and checks["lr-continues"]["ok"], checks
    assert t["rpo"]["steps"] >= 4  # 21-24 at least: the kill lost everything after the reloaded step 20
    assert code in (Exit.OK, Exit.PARTIAL)
    assert not _left_running(trained["tmp"]), "a trainer outlived the drill"


def _left_running(tmp: Path) -> list[str]:
    """Processes whose command line names this test's folder (a trainer the drill did not stop)."""
    left = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            line = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if str(tmp) in line and "pytest" not in line:
            left.append(line)
    return left


@pytest.mark.parametrize("damage", ["missing-shard", "truncated-shard"])
def test_an_incomplete_copy_is_refused_by_the_trainer(trained, capsys, damage):
    code, record = _drill(trained, capsys, "run-a", "--world-size", "2", "--incomplete", damage)
    [check] = record["training"]["checks"]
    assert check["check"] == "refuses-incomplete" and check["ok"] is True, check
    assert record["training"]["incomplete"].startswith(("removed ", "truncated ")) and ".distcp" in check["detail"]
    assert code == Exit.OK and record["training"]["process"]["stopped"] == "exited"


@pytest.mark.skipif(not __import__("torch").cuda.is_available() or __import__("torch").cuda.device_count() < 2,
                    reason="needs two CUDA GPUs: the NCCL variant cannot run on a machine without them")
def test_the_same_resume_on_cuda_with_nccl(tmp_path, capsys):
    """The CPU test's run-a on NCCL: saved at world size 2 on two GPUs, resumed at world size 1."""
    runs, log = tmp_path / "runs", tmp_path / "run-a.progress.jsonl"
    argv = TORCHRUN + ["--nproc-per-node", "2", str(EXAMPLE), "--root", str(runs / "run-a"), "--steps", "40",
                       "--save-every", "10", "--fail-at", "25", "--device", "cuda"]
    subprocess.run(argv, env={**os.environ, "DR_PROGRESS_FILE": str(log)}, capture_output=True, timeout=600)
    command = RESTARTING + ["--nproc-per-node", "{world_size}", str(EXAMPLE), "--root", "{checkpoint}-resumed",
                            "--steps", "40", "--resume", "{checkpoint}", "--device", "cuda"]
    source = (f"  - name: training\n    type: checkpoints\n    rpo: 1h\n    roots: [\"{runs}\"]\n"
              f"    dr_copy: \"{tmp_path / 'dr-copy'}\"\n    settle_seconds: 0\n")
    placed = f"locations:\n  - {{name: dr-copies, domain: region-b, prefixes: [\"{tmp_path / 'dr-copy'}\"]}}\n"
    runs_yaml = (f"readiness:\n  runs:\n    - run: run-a\n      resume:\n        command: {json.dumps(command)}\n"
                 f"        failed_log: \"{log}\"\n        tolerance: 0.0001\n        steps: 10\n")
    plan = write_plan(tmp_path / "plan.yaml", local_target(tmp_path / "repo"), source + placed + runs_yaml)
    assert main(["backup", "--plan", plan, "-q"]) == Exit.OK
    code, record = _drill({"plan": plan, "tmp": tmp_path}, capsys, "run-a", "--world-size", "1")
    assert all(c["ok"] is not False for c in record["training"]["checks"]), record["training"]["checks"]
    assert code in (Exit.OK, Exit.PARTIAL)
