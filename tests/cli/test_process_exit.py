"""The `dr` console script ends the process without interpreter teardown (dr.cli.main:entry):
its output must still be complete when piped (cron, CI), its exit code the command's, and its
exit hooks must still run (temporary files removed)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

ENTRY = [sys.executable, "-c", "from dr.cli.main import entry; entry()"]


def test_piped_output_is_complete_and_the_exit_code_is_the_commands(tmp_path):
    ok = subprocess.run(ENTRY + ["plugins", "--json"], capture_output=True, text=True, timeout=60)
    assert ok.returncode == 0
    assert {"git", "files", "kubernetes", "checkpoints"} <= {p["name"] for p in json.loads(ok.stdout)["exporters"]}
    bad = subprocess.run(ENTRY + ["backup", "--plan", str(tmp_path / "absent.yaml")],
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "absent.yaml" in bad.stderr and "Traceback" not in bad.stderr


def test_exit_hooks_still_run(tmp_path):
    """A temporary directory left to its finalizer (as libraries do) is still removed."""
    marker = tmp_path / "where.txt"
    code = ("import sys, tempfile; from dr.cli import main as m\n"
            "keep = tempfile.TemporaryDirectory()\n"
            f"open({str(marker)!r}, 'w').write(keep.name)\n"
            "sys.argv = ['dr', 'plugins']; m.entry()")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    left = marker.read_text()
    assert left and not os.path.exists(left)


def _closed_pipe() -> int:
    """The write end of a pipe whose reader has already gone (`dr ... | head` after head exits)."""
    read, write = os.pipe()
    os.close(read)
    return write


def test_a_reader_that_goes_away_neither_fails_nor_stops_the_command(tmp_path):
    """`dr snapshots | head -3`: once head exits, every write dr makes to the pipe fails. That is
    not dr's failure (no 'Broken pipe' message, no traceback, the command's own exit code), and
    a restore whose output nobody reads still restores every file."""
    from tests.cli.planfiles import files_source, local_target, write_plan

    data = tmp_path / "data"
    data.mkdir()
    for i in range(50):
        (data / f"f{i:02d}.txt").write_text(f"{i}\n")
    plan = write_plan(tmp_path / "plan.yaml", local_target(tmp_path / "repo"), files_source("config", [str(data)]))
    assert subprocess.run(ENTRY + ["backup", "--plan", plan, "-q"], capture_output=True, timeout=120).returncode == 0
    for argv in (["snapshots", "--plan", plan], ["verify", "--plan", plan, "--json"],
                 ["restore", "--plan", plan, "--source", "config", "--to", str(tmp_path / "back")]):
        pipe = _closed_pipe()
        try:
            run = subprocess.run(ENTRY + argv, stdout=pipe, stderr=subprocess.PIPE, text=True, timeout=120)
        finally:
            os.close(pipe)
        assert run.returncode == 0, (argv, run.stderr)
        assert "Broken pipe" not in run.stderr and "Traceback" not in run.stderr, run.stderr
    restored = sorted(p.name for p in (tmp_path / "back").rglob("*.txt"))
    assert restored == sorted(f"f{i:02d}.txt" for i in range(50))
