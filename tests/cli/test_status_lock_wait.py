"""dr status beside a running prune (the exclusive lock): exit 5 at once, or it waits with --lock-wait.

The rendered status CronJob (every 15 minutes) passes --lock-wait 300: without it, the 03:30
status met the daily prune's lock and exited 5 (found by the day-in-the-cluster harness).
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time

from dr.contract.registry import Registry
from dr.model.plan_loading import load_plan
from dr.repository.locks import Lock
from dr.repository.repositories import Repository
from dr.repository.stores.local import LocalStore
from dr.status import current_status
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


def test_status_reads_the_snapshots_under_its_lock_so_a_prune_cannot_forget_one_mid_read(tmp_path):
    """The 03:30 status of the faked day read the snapshot list, then the prune beside it forgot
    one, then status read that manifest: "no snapshot <id>", exit 1. Status now lists nothing
    before it holds the shared lock: here the prune forgets the newest snapshot while status
    waits, and status measures the source from the one left."""
    data = tmp_path / "data"
    data.mkdir()
    plan = write_plan(tmp_path / "plan.yaml", local_target(tmp_path / "repo"), files_source("config", [str(data)]))
    for version in ("a\n", "b\n"):
        (data / "a.txt").write_text(version)
        assert _dr("backup", "--plan", plan).returncode == 0
    repo = Repository(LocalStore(str(tmp_path / "repo")))
    repo.open()
    older, newer = [s.id for s in repo.snapshots()]
    prune = Lock(repo, exclusive=True, command="dr prune").acquire()
    read: dict = {}

    def status() -> None:
        registry = Registry()
        plan_loaded = load_plan(plan, registry)
        read["status"] = current_status(plan_loaded, registry, plan_loaded.spec.targets[0], lock_wait=60)

    waiting = threading.Thread(target=status)
    try:
        waiting.start()
        time.sleep(1.0)  # status is waiting on the lock
        repo.forget(newer)
    finally:
        prune.release()
    waiting.join(60)
    assert [row["snapshot"] for row in read["status"].sources] == [older]
    assert read["status"].problems == []
