"""The progress protocol's two ends: the writer trainers use (dr.training.progress, standard
library only) and dr's bounded reader (dr.drills.training.events), plus the judgement's
"not checked" answers when the failed run left no log."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from dr.drills.training.events import MAX_LINE, Tail, read_log
from dr.drills.training.judging import judge
from dr.training import progress as progress_module
from dr.training.progress import Progress, sample_ids_digest


def test_the_writer_needs_nothing_but_the_standard_library(tmp_path):
    """Run from its file alone, in an isolated interpreter without site-packages."""
    log = tmp_path / "p.jsonl"
    code = (f"import runpy; m = runpy.run_path({progress_module.__file__!r}); "
            f"p = m['Progress']({str(log)!r}, rank=0); p.step(1, loss=0.5, sample_ids=[3, 1]); p.close()")
    done = subprocess.run([sys.executable, "-I", "-S", "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    started, event = [json.loads(line) for line in log.read_text().splitlines()]
    assert started["event"] == "started" and started["restart"] == 0 and started["pid"] > 0
    assert event["event"] == "step" and event["sample_ids_digest"] == sample_ids_digest([3, 1])


def test_only_rank_zero_writes_and_an_unset_file_is_a_no_op(tmp_path, monkeypatch):
    log = tmp_path / "p.jsonl"
    monkeypatch.setenv("DR_PROGRESS_FILE", str(log))
    monkeypatch.setenv("RANK", "1")
    quiet = Progress()
    assert not quiet.active
    quiet.step(1)
    monkeypatch.setenv("RANK", "0")
    with Progress() as loud:
        loud.group_ready(world_size=2)
        loud.loaded(10)
        loud.step(11, samples=66, loss=float("nan"), lr=0.1, sample_ids=range(300), epoch=0)
    monkeypatch.delenv("DR_PROGRESS_FILE")
    assert not Progress().active
    events = read_log(str(log)).events
    assert [e["event"] for e in events] == ["started", "group_ready", "loaded", "step"]
    assert events[3]["loss"] is None and "sample_ids" not in events[2]  # 300 ids: the digest alone


def test_the_reader_counts_and_skips_what_is_not_an_event_and_waits_for_a_half_written_line(tmp_path):
    log = tmp_path / "p.jsonl"
    good = json.dumps({"event": "step", "step": 1, "t": 1.0})
    lines = [good, "not json", json.dumps(["a list"]), json.dumps({"event": "step", "step": "2", "t": 2.0}),
             json.dumps({"event": "mystery", "t": 1.0}), json.dumps({"event": "step", "step": 3}),
             "x" * (MAX_LINE + 10)]
    log.write_text("\n".join(lines) + "\n" + good[:-5])
    tail = Tail(str(log))
    assert [e["step"] for e in tail.poll()] == [1]
    assert tail.log.malformed == 6
    with open(log, "a") as handle:
        handle.write(good[-5:] + "\n")
    assert [e["step"] for e in tail.poll()] == [1]  # the half line, completed
    assert len(tail.log.events) == 2


def _log(tmp_path: Path, name: str, events: list[dict]):
    path = tmp_path / name
    path.write_text("".join(json.dumps(e) + "\n" for e in events))
    return read_log(str(path))


def test_without_the_failed_runs_log_the_comparisons_say_they_were_not_made(tmp_path):
    resumed = _log(tmp_path, "r.jsonl", [{"event": "group_ready", "t": 1.0}, {"event": "loaded", "step": 20, "t": 2.0}]
                   + [{"event": "step", "step": 20 + i, "t": 2.0 + i, "lr": 0.1, "loss": 1.0} for i in range(1, 9)])
    j = judge(checkpoint_step=20, started=0.5, download_seconds=1.0, resumed=resumed, failed=None,
              tolerance=0.0, steady_within=0.1)
    checks = {c.name: c for c in j.checks}
    assert checks["loaded-step"].ok and checks["first-step-follows"].ok
    for name in ("lr-continues", "data-order", "loss-repeats", "no-sample-repeated"):
        assert checks[name].ok is None and "not checked" in checks[name].detail
    assert j.baseline.how.startswith("the resumed run's own later steps")
    phases = {p.name: p for p in j.phases}
    assert phases["process_group_ready"].seconds == 0.5 and phases["load_and_reshard"].seconds == 1.0
    assert phases["steady_throughput"].measured


def test_a_run_that_starts_over_fails_the_step_checks(tmp_path):
    resumed = _log(tmp_path, "r.jsonl", [{"event": "loaded", "step": 0, "t": 1.0},
                                         {"event": "step", "step": 1, "t": 2.0}])
    j = judge(checkpoint_step=20, started=0.0, download_seconds=0.0, resumed=resumed, failed=None,
              tolerance=0.0, steady_within=0.1)
    checks = {c.name: c for c in j.checks}
    assert checks["loaded-step"].ok is False and checks["loaded-step"].code == "resume-step-mismatch"
    assert checks["first-step-follows"].ok is False and checks["first-step-follows"].code == "resume-no-progress"


def test_the_launchers_failure_line_dates_the_detection(tmp_path):
    """torchrun's agent logs in local time without a year; a line before the kill is not it."""
    import time as clock

    from dr.drills.training.running import failure_noticed

    kill = clock.mktime((2026, 12, 3, 6, 55, 17, 0, 0, -1)) + 0.5
    log = tmp_path / "resume.log"
    log.write_bytes(b"E1203 06:50:00.000000 1 api.py:1002] failed (exitcode: 1) local_rank: 0 (an older run)\n"
                    b"[rank0]: RuntimeError: Connection reset by peer\n"
                    b"W1203 06:55:17.822000 27119 api.py:1028] Sending process 27410 closing signal SIGTERM\n"
                    b"E1203 06:55:17.854000 27119 api.py:1002] failed (exitcode: -9) local_rank: 1 (pid: 27411)\n")
    assert abs(failure_noticed(str(log), kill) - (kill + 0.354)) < 1e-6  # the -9 line, not the older one
    # the log's clock and the kill's may disagree within a second: never before the kill itself
    assert failure_noticed(str(log), kill + 0.9) == kill + 0.9
    log.write_bytes(b"plain output of another launcher\n")
    assert failure_noticed(str(log), kill) is None
    assert failure_noticed(str(tmp_path / "missing.log"), kill) is None
