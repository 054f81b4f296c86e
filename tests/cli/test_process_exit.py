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
    assert {"git", "files", "kubernetes", "checkpoints"} <= {p["name"] for p in json.loads(ok.stdout)}
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
