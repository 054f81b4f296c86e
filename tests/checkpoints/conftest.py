"""Fixtures: real checkpoints written once per session, copied per test (tests damage them).

torch, numpy and safetensors must be installed for these tests (the product itself never
imports torch). A missing one fails the run rather than skipping it: a silently skipped
completeness suite would let a regression through.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.checkpoints.writers import Trainer, save_dcp

HERE = Path(__file__).parent
#: the saves in `dcp_runs`: (directory name, FileSystemWriter options)
DCP_VARIANTS = {
    "step_1": {},
    "step_2": {},
    "step_3": {},
    "threads_3": {"thread_count": 3},  # three __0_<n>.distcp files from one rank
    "per_item": {"single_file_per_rank": False},  # one file per tensor / bytes entry
}


@pytest.fixture(scope="session")
def dcp_runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run directory with several real DCP saves taken between training steps."""
    root = tmp_path_factory.mktemp("dcp_runs")
    trainer = Trainer()
    for name, options in DCP_VARIANTS.items():
        trainer.step(3)
        save_dcp(root / name, trainer.state(), **options)
    return root


@pytest.fixture
def runs(dcp_runs: Path, tmp_path: Path) -> Path:
    """A private copy of dcp_runs that a test may damage, dated an hour back so that any
    change a test makes is later than the save, as it would be in a real run directory."""
    dest = tmp_path / "runs"
    shutil.copytree(dcp_runs, dest)
    age_files(dest, 3600)
    return dest


def age_files(directory: Path, seconds: int) -> None:
    """Move every file's mtime `seconds` into the past (checkpoints are minutes apart)."""
    for f in directory.rglob("*"):
        st = f.stat()
        os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns - seconds * 1_000_000_000))


@pytest.fixture(scope="session")
def multirank(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Real 2-rank saves by two processes (gloo over loopback); see multirank_writer.py."""
    out = tmp_path_factory.mktemp("multirank")
    world = 2
    env = {**os.environ, "GLOO_SOCKET_IFNAME": "lo", "OMP_NUM_THREADS": "1"}
    args = [sys.executable, str(HERE / "multirank_writer.py")]
    procs = [
        subprocess.Popen([*args, str(r), str(world), str(out / "store"), str(out)],
                         env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)  # fmt: skip
        for r in range(world)
    ]
    try:
        logs = [p.communicate(timeout=180)[0].decode(errors="replace") for p in procs]
    finally:
        for p in procs:  # only the processes started here, by their own handle
            if p.poll() is None:
                p.kill()
                p.wait()
    assert procs[-1].returncode == 17, logs  # the last rank was "preempted" as planned
    assert (out / "rank_local_died" / "__0.metadata").exists(), logs
    return out
