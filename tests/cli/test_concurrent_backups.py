"""Backups run side by side (issue 30, point 3): real `dr` processes, a local and a moto S3 repository.

A backup takes a shared lock, so the CronJobs that fire at the same minute no longer refuse
each other (exit 5); prune alone is exclusive. The processes start at the same moment
(tests/cli/together.py), so their first reads of the repository really overlap.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time

import pytest

from dr.cli.exitcodes import Exit
from dr.repository.repositories import Repository
from dr.repository.stores.local import LocalStore
from tests.cli.planfiles import blob_count, files_source, local_target, random_tree, tree_bytes, write_plan
from tests.cli.together import run_together

DR = [sys.executable, "-m", "dr.cli.main"]
ROUNDS = 20
SOURCES = ["alpha", "beta", "gamma", "delta"]


def _two_targets(local_root, bucket: str, endpoint: str) -> str:
    return (f'{{name: here, url: "{local_root}", domain: region-b}}\n'
            f'  - {{name: cloud, url: "s3://{bucket}/repo", domain: region-b, endpoint_url: "{endpoint}", '
            "region: us-east-1}")


def _dr(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(DR + list(args), capture_output=True, text=True, timeout=300)


@pytest.mark.slow
def test_four_backups_started_in_the_same_second_all_succeed(tmp_path, s3_bucket, moto_endpoint):
    """The four CronJobs of plans/multi-region.yaml at minute 0, 20 hours running: each round
    every source changed, and all four share one file (the same blob uploaded at once)."""
    for name in SOURCES:
        (tmp_path / name).mkdir()
    sources = "".join(files_source(name, [str(tmp_path / name)]) for name in SOURCES)
    plan = write_plan(tmp_path / "plan.yaml", _two_targets(tmp_path / "repo", s3_bucket(), moto_endpoint), sources)
    started = time.monotonic()
    for round_ in range(ROUNDS):
        for name in SOURCES:
            (tmp_path / name / "own.txt").write_text(f"{name} in round {round_}\n")
            (tmp_path / name / "shared.txt").write_text(f"every source in round {round_}\n")
        results = run_together(str(tmp_path / f"go{round_}"),
                                [["backup", "--plan", plan, "--source", name, "-q"] for name in SOURCES])
        assert [code for code, _ in results] == [Exit.OK] * 4, (round_, results)
        assert not any("Traceback" in err for _, err in results)
    elapsed = time.monotonic() - started
    for target in ("here", "cloud"):
        listed = _dr("snapshots", "--plan", plan, "--target", target, "--json")
        assert listed.returncode == Exit.OK, listed.stderr
        assert listed.stdout.count('"id"') == ROUNDS * len(SOURCES), listed.stdout[:500]
    checked = _dr("verify", "--plan", plan, "--read-data")
    assert checked.returncode == Exit.OK, checked.stdout + checked.stderr
    print(f"{ROUNDS} rounds of {len(SOURCES)} simultaneous backups into 2 repositories: {elapsed:.1f} s")


def test_two_backups_of_the_same_source_at_once_both_restore(tmp_path, s3_bucket, moto_endpoint):
    data = random_tree(tmp_path, 12, lambda i: 40_000 + i)
    plan = write_plan(tmp_path / "plan.yaml", _two_targets(tmp_path / "repo", s3_bucket(), moto_endpoint),
                      files_source("data", [data]))
    results = run_together(str(tmp_path / "go"), [["backup", "--plan", plan, "--source", "data", "-q"]] * 2)
    assert [code for code, _ in results] == [Exit.OK, Exit.OK], results
    ids = Repository(LocalStore(str(tmp_path / "repo"))).snapshot_ids()
    assert len(ids) == 2  # two manifests (their times differ), the same catalog and chunks
    for target in ("here", "cloud"):
        assert _dr("verify", "--plan", plan, "--target", target, "--read-data").returncode == Exit.OK
    for snapshot in ids:
        back = tmp_path / f"back-{snapshot[:8]}"
        restored = _dr("restore", "--plan", plan, "--source", "data", "--target", "here", "--snapshot", snapshot,
                       "--to", str(back), "-q")
        assert restored.returncode == Exit.OK, restored.stderr
        assert tree_bytes(back / "data") == tree_bytes(data)



def test_a_prune_waits_for_a_running_backup_and_never_takes_its_blobs(tmp_path):
    """The backup is stopped (SIGSTOP) mid-upload, holding its shared lock with blobs that no
    manifest references yet: exactly what a prune's sweep would delete."""
    data = random_tree(tmp_path, 60, lambda i: 256 << 10)
    root = tmp_path / "repo"
    plan = write_plan(tmp_path / "plan.yaml", local_target(root), files_source("data", [data]))
    assert _dr("backup", "--plan", plan, "-q").returncode == Exit.OK  # something for retention to keep
    for i in range(60):  # every file changes: the next backup uploads 60 new chunks
        with open(os.path.join(data, f"d{i % 6}", f"f{i}.bin"), "ab") as handle:
            handle.write(b"changed")
    before = blob_count(root)
    backup = subprocess.Popen(DR + ["backup", "--plan", plan, "-q"], stderr=subprocess.PIPE, text=True)
    while backup.poll() is None and blob_count(root) < before + 5:
        time.sleep(0.002)
    backup.send_signal(signal.SIGSTOP)
    try:
        assert backup.poll() is None, "the backup finished before it could be stopped"
        _wait_stopped(backup.pid)  # a write in flight when the signal was sent lands first
        held = _blob_names(root)
        refused = _dr("prune", "--plan", plan)
        assert refused.returncode == Exit.LOCKED, refused.stdout + refused.stderr
        assert "shared lock by 'dr backup --plan test'" in refused.stderr
        assert _blob_names(root) == held  # nothing swept
        waiting = subprocess.Popen(DR + ["prune", "--plan", plan, "--lock-wait", "120", "--json"],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(2)
        assert waiting.poll() is None  # it waits for the backup
        assert held <= _blob_names(root)
    finally:
        backup.send_signal(signal.SIGCONT)
    assert backup.wait(timeout=120) == Exit.OK, backup.stderr.read()
    out, err = waiting.communicate(timeout=120)
    assert waiting.returncode == Exit.OK, out + err
    assert held <= _blob_names(root)
    assert len(Repository(LocalStore(str(root))).snapshot_ids()) == 2
    checked = _dr("verify", "--plan", plan, "--read-data")
    assert checked.returncode == Exit.OK, checked.stdout + checked.stderr


def _wait_stopped(pid: int, timeout: float = 10.0) -> None:
    """Until every thread of `pid` is stopped: kill() returns before the signal takes effect, and
    an upload thread may still rename a blob into place meanwhile (a CI run saw three appear)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        states = []
        for task in os.listdir(f"/proc/{pid}/task"):
            with contextlib.suppress(OSError), open(f"/proc/{pid}/task/{task}/stat") as handle:
                states.append(handle.read().rsplit(")", 1)[1].split()[0])
        if states and all(state in ("T", "t") for state in states):
            return  # no thread is inside a system call any more: nothing else lands
        time.sleep(0.005)
    raise AssertionError(f"process {pid} did not stop within {timeout} s")


def _blob_names(root) -> set[str]:
    return {name for _, _, names in os.walk(root / "blobs") for name in names}
