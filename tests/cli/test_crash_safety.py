"""A backup killed with SIGKILL at any point leaves no visible snapshot and nothing verify rejects.

Real `dr backup` processes, killed at spread-out moments of a measured full run.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from dr.repository import checking, pruning
from dr.repository.repositories import Repository
from dr.repository.stores.local import LocalStore
from tests.cli.planfiles import blob_count, files_source, local_target, random_tree, write_plan

DR = [sys.executable, "-m", "dr.cli.main"]


def _tree(root) -> str:
    return random_tree(root, 120, lambda i: 256 << 10 if i % 10 else 3 << 20)


def _kill_after_blobs(plan: str, repo_root, threshold: int) -> None:
    """Start a backup and SIGKILL it once `threshold` blobs are stored (or it finished)."""
    child = subprocess.Popen(DR + ["backup", "--plan", plan, "--quiet"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while child.poll() is None and blob_count(repo_root) < threshold and time.monotonic() < deadline:
        time.sleep(0.002)
    child.send_signal(signal.SIGKILL)
    child.wait()


def test_sigkill_at_any_point_leaves_a_consistent_repository(tmp_path):
    data = _tree(tmp_path)
    killed_partway = 0
    # thresholds spread over the run: the first blob, the middle, just before the catalog
    for n, threshold in enumerate([1, 20, 60, 100, 125, 10_000]):
        root = tmp_path / f"repo{n}"
        plan = write_plan(tmp_path / f"plan{n}.yaml", local_target(root), files_source("data", [data]))
        _kill_after_blobs(plan, root, threshold)
        repo = Repository(LocalStore(str(root)))
        if not os.path.exists(root / "config"):
            continue  # killed before the repository existed: nothing to judge
        repo.open()
        ids = repo.snapshot_ids()
        killed_partway += not ids and blob_count(root) > 0
        # either no snapshot, or a complete one: never a partial one
        report = checking.check(repo, read_data=True)
        assert report.ok, report.problems
        # the next backup completes despite the dead process's lock (same host, pid gone)
        subprocess.run(DR + ["backup", "--plan", plan, "--quiet"], check=True, capture_output=True)
        assert len(repo.snapshot_ids()) == len(ids) + 1
        assert checking.check(repo, read_data=True).ok
        # prune reclaims what the killed run left and keeps everything referenced
        pruning.prune(repo, [])
        assert {d for d, _ in repo.list_blobs()} == pruning.referenced_blobs(repo)
        assert checking.check(repo, read_data=True).ok
    assert killed_partway >= 3, "kills did not land mid-backup: the test proved nothing"
