"""dr status beside a running prune (the exclusive lock): exit 5 at once, or it waits with --lock-wait.

The rendered status CronJob (every 15 minutes) passes --lock-wait 300: without it, the 03:30
status met the daily prune's lock and exited 5 (found by the day-in-the-cluster harness).
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time

from dr.repository.locks import Lock
from dr.repository.repositories import Repository
from dr.repository.stores.local import LocalStore
from tests.cli.planfiles import files_source, local_target, write_plan


def _dr(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "dr.cli.main", *argv], capture_output=True, text=True, timeout=120)


def test_status_waits_for_a_prune_with_lock_wait_and_fails_without(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    (data / "a.txt").write_text("a\n")
    plan = write_plan(tmp_path / "plan.yaml", local_target(tmp_path / "repo"), files_source("config", [str(data)]))
    assert _dr("backup", "--plan", plan).returncode == 0
    repo = Repository(LocalStore(str(tmp_path / "repo")))
    repo.open()
    prune = Lock(repo, exclusive=True, command="dr prune").acquire()
    try:
        refused = _dr("status", "--plan", plan)
        assert refused.returncode == 5, refused.stderr
        assert "locked" in refused.stderr
        threading.Thread(target=lambda: (time.sleep(3), prune.release()), daemon=True).start()
        started = time.monotonic()
        waited = _dr("status", "--plan", plan, "--lock-wait", "60")
    finally:
        prune.release()
    assert waited.returncode == 0, waited.stderr
    assert time.monotonic() - started >= 2.5  # it waited for the prune, then ran
