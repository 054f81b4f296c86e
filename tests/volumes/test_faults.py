"""Bad input and faults of the `volumes` exporter: a snapshot that never becomes ready, files the
mover cannot read, a claim too small for the restore.

Emulated API servers; THE CSI DRIVER AND THE KUBELET ARE STAND-INS (tests/harness/volumes.py,
tests/harness/jobs.py). The full volume is real: the stand-in mounts the claim as a tmpfs of
its requested size, so the mover meets a real ENOSPC."""

from __future__ import annotations

import json
import os
import sys
import time

import pytest

from dr.cli.main import main
from tests.harness import EmulatedCluster, write_kubeconfig
from tests.harness.jobs import JobRunner
from tests.harness.volumes import CsiStandIn, delete, list_objects
from tests.volumes.helpers import claim, findings, volumes_plan

@pytest.fixture
def cluster(tmp_path):
    with EmulatedCluster(name="source") as c:
        yield c, str(write_kubeconfig(tmp_path / "kubeconfig", {"source": c}))


def test_a_snapshot_that_never_becomes_ready_fails_its_claim_by_name(cluster, tmp_path, capsys):
    c, kubeconfig = cluster
    with CsiStandIn(c, tmp_path / "csi", never_ready=lambda ns, name: True) as csi, \
            JobRunner(c, csi, tmp_path / "pods", programs={"python": sys.executable}):
        c.create_objects(claim("ml", "stuck"))
        csi.directory_of("ml", "stuck")
        plan = volumes_plan(tmp_path, kubeconfig, "source", namespaces=["ml"], snapshot_timeout_seconds=1)
        code = main(["backup", "--plan", plan, "--json"])
        out = capsys.readouterr().out
        (failed,) = [f for f in findings(json.loads(out)) if f["code"] == "volumes-copy-failed"]
        assert code != 0 and "ml/stuck" in failed["message"] and "readyToUse" in failed["message"], out
        assert "snapshot_timeout_seconds" in failed["message"]
        left = [o for o in c.list_objects("snapshot.storage.k8s.io/v1", "VolumeSnapshot", "ml")]
        assert left == [], "the snapshot of the failed copy was left behind"


def test_files_the_mover_cannot_read_are_named_and_counted_and_the_rest_copied(cluster, tmp_path, capsys):
    c, kubeconfig = cluster
    with CsiStandIn(c, tmp_path / "csi") as csi, \
            JobRunner(c, csi, tmp_path / "pods", programs={"python": sys.executable}):
        c.create_objects(claim("ml", "data"))
        folder = csi.directory_of("ml", "data")
        with open(os.path.join(folder, "good.bin"), "wb") as handle:
            handle.write(b"good" * 1000)
        os.mkfifo(os.path.join(folder, "a-fifo"))  # not a file, directory or symlink
        plan = volumes_plan(tmp_path, kubeconfig, "source", namespaces=["ml"], snapshot="never")
        code = main(["backup", "--plan", plan, "--json"])
        out = capsys.readouterr().out
        found = findings(json.loads(out))
        unreadable = [f for f in found if f["code"] == "volumes-unreadable"]
        assert [f["path"] for f in unreadable] == ["a-fifo"], out
        assert any(f["code"] == "volumes-live-copy" for f in found), out
        assert code != 0  # lost data is an error finding
        assert main(["snapshots", "--plan", plan, "--json"]) in (0, 1)
        capsys.readouterr()


def test_a_claim_too_small_fails_the_restore_with_nothing_placed(cluster, tmp_path, capsys):
    c, kubeconfig = cluster
    with EmulatedCluster(name="recovery") as r:
        both = str(write_kubeconfig(tmp_path / "kubeconfig-both", {"source": c, "recovery": r}))
        with CsiStandIn(c, tmp_path / "csi") as csi, \
                JobRunner(c, csi, tmp_path / "pods", programs={"python": sys.executable}), \
                CsiStandIn(r, tmp_path / "csi-r", size_limited=True) as small, \
                JobRunner(r, small, tmp_path / "pods-r", programs={"python": sys.executable}):
            c.create_objects(claim("ml", "big", "1Mi"))
            with open(os.path.join(csi.directory_of("ml", "big"), "blob.bin"), "wb") as handle:
                handle.write(os.urandom(3 << 20))  # the source's stand-in does not limit the size
            plan = volumes_plan(tmp_path, both, "source", namespaces=["ml"])
            assert main(["backup", "--plan", plan, "-q"]) == 0, capsys.readouterr()
            capsys.readouterr()
            code = main(["restore", "--plan", plan, "--source", "vols", "--to", f"vols={both}:recovery", "--json"])
            out = capsys.readouterr().out
            assert code != 0 and "the volume is full" in out, out
            folder = small.directory_of("ml", "big")
            assert os.listdir(folder) == [], "something was placed on the full volume"


def test_a_claim_deleted_before_its_snapshot_is_named_as_skipped_and_the_others_are_copied(cluster, tmp_path,
                                                                                             capsys):
    c, kubeconfig = cluster

    def deleted_while_dr_waits(ns: str, snapshot: str) -> bool:
        """The stand-in asks whether a snapshot stays unready: ml/gone's does, and the claim is deleted."""
        (snap,) = [s for s in list_objects(c, "snapshot.storage.k8s.io/v1", "VolumeSnapshot")
                   if s["metadata"]["name"] == snapshot]
        if snap["spec"]["source"]["persistentVolumeClaimName"] != "gone":
            return False
        delete(c, "v1", "PersistentVolumeClaim", "gone", ns)
        return True

    with CsiStandIn(c, tmp_path / "csi", never_ready=deleted_while_dr_waits) as csi, \
            JobRunner(c, csi, tmp_path / "pods", programs={"python": sys.executable}):
        c.create_objects(claim("ml", "gone") + claim("ml", "kept")[1:])
        with open(os.path.join(csi.directory_of("ml", "kept"), "a.txt"), "w") as handle:
            handle.write("kept")
        csi.directory_of("ml", "gone")
        plan = volumes_plan(tmp_path, kubeconfig, "source", namespaces=["ml"], snapshot_timeout_seconds=60)
        started = time.monotonic()
        code = main(["backup", "--plan", plan, "--json"])
        out = capsys.readouterr().out
        document = json.loads(out)
        skipped = [f for f in findings(document) if f["code"] == "volumes-claim-skipped"]
        assert [f["message"] for f in skipped] == ["ml/gone: deleted during the backup, before its snapshot was "
                                                   "taken: not copied"], out
        assert code == 0, out
        assert time.monotonic() - started < 30, "dr waited out the snapshot time-out for a claim that is gone"
        (result,) = document["results"]
        assert result["stats"]["artifacts"] == 3, out  # ml/kept: the claim, its root directory, a.txt
