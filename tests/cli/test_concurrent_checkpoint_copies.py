"""Two backups of one checkpoints source at once (issue 30, point 3): the DR copies outside the
repository are made by one backup at a time, under the lock kept in the DR target
(dr.exporters.checkpoints.copies.locking); the repository's lock is shared."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest
from torch.distributed.checkpoint import FileSystemReader

from dr.cli.exitcodes import Exit
from dr.exporters.checkpoints.copies.locking import copy_lock
from dr.kits.places.local import LocalPlace
from dr.repository.locks import read_locks
from tests.checkpoints.test_exporter_helpers import assert_same_state, load_state, save_steps
from tests.cli.planfiles import local_target, write_plan
from tests.cli.together import run_together

DR = [sys.executable, "-m", "dr.cli.main"]


def _plan(tmp_path) -> str:
    source = (f"  - name: training\n    type: checkpoints\n    roots: [\"{tmp_path / 'runs'}\"]\n"
              f"    dr_copy: \"{tmp_path / 'dr-copy'}\"\n    settle_seconds: 0\n")
    return write_plan(tmp_path / "plan.yaml", local_target(tmp_path / "repo"), source)


def _dr(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(DR + list(args), capture_output=True, text=True, timeout=300)


@pytest.mark.slow
def test_two_backups_of_one_checkpoints_source_at_once(tmp_path):
    saved = save_steps(tmp_path / "runs", "llama", [100, 200], single_file_per_rank=False)
    plan = _plan(tmp_path)
    results = run_together(str(tmp_path / "go"), [["backup", "--plan", plan, "-q"]] * 2)
    assert [code for code, _ in results] == [Exit.OK, Exit.OK], results
    checked = _dr("verify", "--plan", plan, "--read-data")
    assert checked.returncode == Exit.OK, checked.stdout + checked.stderr
    for snapshot in _snapshots(plan):  # each records both copies, and each restores
        [source] = snapshot["sources"]
        assert (source["name"], source["artifacts"], source.get("error")) == ("training", 2, None)
        snapshot = snapshot["id"]
        back = tmp_path / f"back-{snapshot[:8]}"
        restored = _dr("restore", "--plan", plan, "--source", "training", "--snapshot", snapshot,
                       "--run", "llama", "--step", "200", "--to", str(back), "-q")
        assert restored.returncode == Exit.OK, restored.stderr
        assert_same_state(load_state(FileSystemReader(str(back / "llama" / "step-200"))), saved[200])
    copy = tmp_path / "dr-copy" / "training" / "llama"
    assert sorted(os.listdir(copy)) == ["step-100", "step-200"]
    assert not any("dr-journal" in names for _, names, _ in os.walk(copy))  # both finished cleanly
    assert read_locks(_lock_space(tmp_path)) == []


def _snapshots(plan: str) -> list[dict]:
    listed = json.loads(_dr("snapshots", "--plan", plan, "--json").stdout)["snapshots"]
    assert len(listed) == 2
    return listed


def _lock_space(tmp_path):
    lock = copy_lock(LocalPlace(str(tmp_path / "dr-copy")), "training", "test")
    space = lock.space
    lock.release()
    return space


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
