"""Interrupting a volumes backup or restore (issue 26, done-when 3): a dr killed at any point
leaves no temporary object behind once the next run has run, and a restore run again after
being killed finishes the claim without --overwrite.

The clusters are emulated API servers; tests/harness/volumes.py stands for a CSI driver and
tests/harness/jobs.py for the kubelet and the Job controller. dr runs as its own process
here, so that it can be killed (SIGKILL: no `finally` runs) or interrupted (SIGINT: Ctrl-C).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from dr.cli.main import main
from tests.harness import EmulatedCluster, write_kubeconfig
from tests.harness.jobs import JobRunner
from tests.harness.volumes import CsiStandIn, list_objects
from tests.volumes.helpers import claim, tree, volumes_plan

DR = os.path.join(os.path.dirname(sys.executable), "dr")
TEMPORARY_KINDS = (("batch/v1", "Job"), ("v1", "Secret"), ("v1", "PersistentVolumeClaim"),
                   ("snapshot.storage.k8s.io/v1", "VolumeSnapshot"))


@pytest.fixture
def two(tmp_path):
    with EmulatedCluster(name="source") as a, EmulatedCluster(name="recovery") as b:
        kubeconfig = str(write_kubeconfig(tmp_path / "kubeconfig", {"source": a, "recovery": b}))
        with CsiStandIn(a, tmp_path / "csi-a") as csi_a, CsiStandIn(b, tmp_path / "csi-b") as csi_b, \
                JobRunner(a, csi_a, tmp_path / "pods-a", programs={"python": sys.executable}), \
                JobRunner(b, csi_b, tmp_path / "pods-b", programs={"python": sys.executable}):
            a.create_objects(claim("ml", "data"))
            folder = csi_a.directory_of("ml", "data")
            for index in range(40):
                with open(os.path.join(folder, f"part-{index:02d}.bin"), "wb") as handle:
                    handle.write(os.urandom(1 << 20))
            plan = volumes_plan(tmp_path, kubeconfig, "source", namespaces=["ml"])
            yield {"a": a, "b": b, "csi_b": csi_b, "folder": folder, "plan": plan, "kubeconfig": kubeconfig,
                   "env": {**os.environ, "DR_CACHE_DIR": str(tmp_path / "cache")}}


def temporaries(cluster) -> list[str]:
    return [f"{kind} {o['metadata']['namespace']}/{o['metadata']['name']}" for api, kind in TEMPORARY_KINDS
            for o in list_objects(cluster, api, kind, "dr.io/temporary=volumes")]


def start_and_stop(argv: list[str], env: dict, ready, sig: int, timeout: float = 60) -> subprocess.Popen:
    """Run dr, and send it `sig` as soon as ready() holds (fail if dr ends first)."""
    proc = subprocess.Popen([DR, *argv], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + timeout
    while not ready():
        assert proc.poll() is None, f"dr ended before it could be stopped: {proc.communicate()}"
        assert time.monotonic() < deadline, "the point to stop dr at never came"
        time.sleep(0.01)
    proc.send_signal(sig)
    proc.communicate(timeout=60)
    return proc


def _has(cluster, api: str, kind: str):
    return lambda: bool(list_objects(cluster, api, kind, "dr.io/temporary=volumes"))


@pytest.mark.parametrize("point", ["snapshot", "mover"])
def test_a_killed_backup_leaves_nothing_once_the_next_backup_ran(two, point, capsys):
    api, kind = {"snapshot": ("snapshot.storage.k8s.io/v1", "VolumeSnapshot"), "mover": ("batch/v1", "Job")}[point]
    start_and_stop(["backup", "--plan", two["plan"], "-q"], two["env"], _has(two["a"], api, kind), signal.SIGKILL)
    assert temporaries(two["a"]), "the kill left nothing: it came too late to test anything"
    assert main(["backup", "--plan", two["plan"], "-q"]) == 0, capsys.readouterr()
    assert temporaries(two["a"]) == []


def test_an_interrupted_backup_removes_its_own_temporaries(two):
    proc = start_and_stop(["backup", "--plan", two["plan"]], two["env"], _has(two["a"], "batch/v1", "Job"),
                          signal.SIGINT)
    assert proc.returncode != 0
    assert temporaries(two["a"]) == []


def test_a_restore_killed_mid_write_is_finished_by_the_next_without_overwrite(two, capsys):
    assert main(["backup", "--plan", two["plan"], "-q"]) == 0, capsys.readouterr()
    restore = ["restore", "--plan", two["plan"], "--source", "vols", "--to", f"vols={two['kubeconfig']}:recovery"]

    def writing() -> bool:
        claims = [c for c in list_objects(two["b"], "v1", "PersistentVolumeClaim") if c["metadata"]["name"] == "data"]
        if not claims:
            return False
        staging = os.path.join(two["csi_b"].directory_of("ml", "data"), ".dr-restore-staging")
        return os.path.isdir(staging) and len(os.listdir(staging)) > 2

    start_and_stop([*restore, "-q"], two["env"], writing, signal.SIGKILL)
    restored = two["csi_b"].directory_of("ml", "data")
    # nothing is visible to a workload: the mover staged it (and drops the staging when dr's stream breaks)
    assert set(os.listdir(restored)) <= {".dr-restore-staging"}, os.listdir(restored)
    assert temporaries(two["b"]), "the kill left no mover behind: it came too late"
    code = main([*restore, "--json"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert tree(restored) == tree(two["folder"])  # the staging directory is gone too
    assert temporaries(two["b"]) == []
