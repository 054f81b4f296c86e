"""SIGTERM (a Job's deadline, a node drain) stops a backup as Ctrl-C does: its lock released.

Real `dr backup` processes, sent SIGTERM mid-run. Without the handler Python dies at once and
the lock object stays in the repository (a SIGKILL's fate: tests/cli/test_crash_safety.py).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from dr.cli.exitcodes import Exit
from dr.repository import checking
from dr.repository.repositories import Repository
from dr.repository.stores.local import LocalStore
from tests.cli.planfiles import blob_count, files_source, local_target, random_tree, write_plan

DR = [sys.executable, "-m", "dr.cli.main"]


def _locks(root) -> list[str]:
    folder = os.path.join(str(root), "locks")
    return [name for _, _, names in os.walk(folder) for name in names] if os.path.isdir(folder) else []


# at_lock: the moment the lock object appears, while the backup may still be acquiring it (the
# window between writing it and the `with` that releases it); mid_upload: blobs being stored
@pytest.mark.parametrize("moment", ["at_lock", "mid_upload"])
def test_sigterm_mid_backup_releases_the_lock_and_exits_143(tmp_path, moment):
    data = random_tree(tmp_path, 150, lambda i: 512 << 10)
    root = tmp_path / "repo"
    plan = write_plan(tmp_path / "plan.yaml", local_target(root), files_source("data", [data]))
    child = subprocess.Popen(DR + ["backup", "--plan", plan], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
    reached = (lambda: _locks(root)) if moment == "at_lock" else (lambda: blob_count(root) >= 20)
    deadline = time.monotonic() + 60
    while child.poll() is None and not reached() and time.monotonic() < deadline:
        time.sleep(0.002)
    assert child.poll() is None and _locks(root), "the backup ended before the moment came"
    child.send_signal(signal.SIGTERM)
    _, err = child.communicate(timeout=60)

    assert child.returncode == Exit.TERMINATED, err
    assert "terminated (SIGTERM" in err and "Traceback" not in err
    assert _locks(root) == []  # released on the way out, not left for 30 minutes
    repo = Repository(LocalStore(str(root)))
    repo.open()
    assert repo.snapshot_ids() == [] and checking.check(repo, read_data=True).ok
    # the next scheduled run does not wait for a stale lock
    done = subprocess.run(DR + ["backup", "--plan", plan, "--quiet", "--lock-wait", "0"], capture_output=True,
                          text=True)
    assert done.returncode == Exit.OK, done.stderr
    assert len(repo.snapshot_ids()) == 1
