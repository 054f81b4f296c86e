"""Two backups of one checkpoints source at once (issue 30, point 3): the DR copies outside the
repository are made by one backup at a time, under the lock kept in the DR target
(dr.exporters.checkpointing.copies.locking); the repository's lock is shared."""

from __future__ import annotations

import subprocess
import sys
import time

from dr.cli.exitcodes import Exit
from dr.exporters.checkpointing.copies.locking import copy_lock
from dr.exporters.checkpointing.places.local import LocalPlace
from tests.checkpoints.test_exporter_helpers import save_steps
from tests.cli.planfiles import local_target, write_plan

DR = [sys.executable, "-m", "dr.cli.main"]


def _plan(tmp_path) -> str:
    source = (f"  - name: training\n    type: checkpoints\n    roots: [\"{tmp_path / 'runs'}\"]\n"
              f"    dr_copy: \"{tmp_path / 'dr-copy'}\"\n    settle_seconds: 0\n")
    return write_plan(tmp_path / "plan.yaml", local_target(tmp_path / "repo"), source)


def _dr(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(DR + list(args), capture_output=True, text=True, timeout=300)


def test_a_backup_waits_while_another_copies_the_same_source(tmp_path):
    """The copy lock held (here by the test, as a backup on another pod would): a backup of that
    source neither copies nor fails; it waits, and copies once the lock is released."""
    save_steps(tmp_path / "runs", "llama", [100], single_file_per_rank=False)
    plan = _plan(tmp_path)
    started = time.monotonic()
    assert _dr("backup", "--plan", plan, "-q").returncode == Exit.OK
    unhindered = time.monotonic() - started  # what the held one would take without the lock
    save_steps(tmp_path / "runs", "llama", [200], single_file_per_rank=False)
    marker = tmp_path / "dr-copy" / "training" / "llama" / "step-200" / "DR-COMPLETE"
    held = copy_lock(LocalPlace(str(tmp_path / "dr-copy")), "training", "dr backup on another pod")
    try:
        backup = subprocess.Popen(DR + ["backup", "--plan", plan, "-q"], stderr=subprocess.PIPE, text=True)
        time.sleep(2 * unhindered + 2)
        assert backup.poll() is None and not marker.exists()
    finally:
        held.release()
    assert backup.wait(timeout=120) == Exit.OK, backup.stderr.read()
    assert marker.exists()
    assert _dr("verify", "--plan", plan, "--read-data").returncode == Exit.OK
