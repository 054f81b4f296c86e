"""The CSI stand-in (tests/harness/volumes.py), which STANDS FOR A CSI DRIVER (csi-hostpath) and its
provisioner, snapshotter and the snapshot controller, none of which can run here: claims bind to
directories, snapshots are copies of them, restores copies back. All through the emulated API server."""

from __future__ import annotations

import os
import time

import pytest

from tests.harness.volumes import CsiStandIn, delete

SNAP = "snapshot.storage.k8s.io/v1"


@pytest.fixture
def ns(cluster):
    name = f"csi-{time.monotonic_ns() % 10**9}"
    cluster.create_objects([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}])
    return name


def claim(name, ns, size="10Mi", **spec):
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name, "namespace": ns},
            "spec": {"storageClassName": "csi-hostpath-sc", "accessModes": ["ReadWriteOnce"],
                     "resources": {"requests": {"storage": size}}, **spec}}


def snapshot(name, ns, source, cls="csi-hostpath-snapclass"):
    return {"apiVersion": SNAP, "kind": "VolumeSnapshot", "metadata": {"name": name, "namespace": ns},
            "spec": {"volumeSnapshotClassName": cls, "source": {"persistentVolumeClaimName": source}}}


def wait_for(fn, timeout=10.0):
    deadline = time.monotonic() + timeout
    while not (value := fn()):
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)
    return value


def seed(directory):
    with open(os.path.join(directory, "a.txt"), "wb") as f:
        f.write(b"hello volume\n")
    os.makedirs(os.path.join(directory, "sub"))
    os.chmod(os.path.join(directory, "sub"), 0o750)
    with open(os.path.join(directory, "sub", "b.bin"), "wb") as f:
        f.write(os.urandom(4096))
    os.chmod(os.path.join(directory, "sub", "b.bin"), 0o600)
    os.utime(os.path.join(directory, "a.txt"), (1_600_000_000, 1_600_000_000))
    os.symlink("sub/b.bin", os.path.join(directory, "link"))
    with open(os.path.join(directory, "sparse"), "wb") as f:
        f.truncate(10 * 1024 * 1024)
        f.seek(5 * 1024 * 1024)
        f.write(b"x")


def tree(directory):
    found = {}
    for base, dirs, files in os.walk(directory):
        for entry in dirs + files:
            path = os.path.join(base, entry)
            st = os.lstat(path)
            rel = os.path.relpath(path, directory)
            if os.path.islink(path):
                found[rel] = ("link", os.readlink(path))
            elif os.path.isdir(path):
                found[rel] = ("dir", st.st_mode, st.st_uid)
            else:
                with open(path, "rb") as f:
                    found[rel] = ("file", st.st_mode, st.st_uid, st.st_mtime_ns, f.read())
    return found


def test_a_claim_binds_to_a_directory_and_a_restore_from_its_snapshot_is_the_same_files(cluster, ns, tmp_path):
    with CsiStandIn(cluster, tmp_path / "csi") as csi:
        assert cluster.get_object("storage.k8s.io/v1", "StorageClass", "csi-hostpath-sc")["provisioner"] == csi.driver
        cluster.create_objects([claim("data", ns)])
        directory = csi.directory_of(ns, "data")
        pvc = wait_for(lambda: (c := cluster.get_object("v1", "PersistentVolumeClaim", "data", ns))
                       and c["status"]["phase"] == "Bound" and c)
        pv = cluster.get_object("v1", "PersistentVolume", pvc["spec"]["volumeName"])
        assert pv["metadata"]["name"] == f"pvc-{pvc['metadata']['uid']}"
        assert pv["spec"]["csi"] == {"driver": csi.driver, "volumeHandle": directory, "fsType": "ext4"}
        assert pv["spec"]["claimRef"]["uid"] == pvc["metadata"]["uid"]
        assert pvc["status"]["capacity"] == {"storage": "10Mi"}
        seed(directory)

        cluster.create_objects([snapshot("snap", ns, "data")])
        vs = wait_for(lambda: (s := cluster.get_object(SNAP, "VolumeSnapshot", "snap", ns))
                      and (s.get("status") or {}).get("readyToUse") and s)
        content = cluster.get_object(SNAP, "VolumeSnapshotContent", vs["status"]["boundVolumeSnapshotContentName"])
        assert content["status"]["readyToUse"] is True and content["spec"]["driver"] == csi.driver
        assert content["spec"]["volumeSnapshotRef"]["uid"] == vs["metadata"]["uid"]
        with open(os.path.join(directory, "a.txt"), "ab") as f:
            f.write(b"written after the snapshot\n")

        cluster.create_objects([claim("restored", ns, dataSource={
            "apiGroup": "snapshot.storage.k8s.io", "kind": "VolumeSnapshot", "name": "snap"})])
        restored = csi.directory_of(ns, "restored")
        snapdir = csi.snapshot_directory(ns, "snap")
        assert tree(restored) == tree(snapdir)
        assert tree(restored)["a.txt"][-1] == b"hello volume\n"
        assert tree(restored)["a.txt"][3] == 1_600_000_000 * 10**9
        assert tree(restored)["link"] == ("link", "sub/b.bin")
        assert os.stat(os.path.join(restored, "sparse")).st_size == 10 * 1024 * 1024
        assert os.stat(os.path.join(restored, "sparse")).st_blocks * 512 < 1024 * 1024

        delete(cluster, SNAP, "VolumeSnapshot", "snap", ns)
        wait_for(lambda: not os.path.exists(snapdir))
        assert cluster.get_object(SNAP, "VolumeSnapshotContent", content["metadata"]["name"]) is None
        delete(cluster, "v1", "PersistentVolumeClaim", "data", ns)
        wait_for(lambda: not os.path.exists(directory))
        assert cluster.get_object("v1", "PersistentVolume", pv["metadata"]["name"]) is None
        delete(cluster, "v1", "Namespace", ns)
        wait_for(lambda: not os.path.exists(restored))
        assert not [p for p in cluster.list_objects("v1", "PersistentVolume")
                    if p["spec"]["claimRef"]["namespace"] == ns]


def test_a_never_ready_snapshot_stays_unready_and_its_restore_pending(cluster, ns, tmp_path):
    with CsiStandIn(cluster, tmp_path / "csi", never_ready={"stuck"}) as csi:
        cluster.create_objects([claim("data", ns)])
        csi.directory_of(ns, "data")
        cluster.create_objects([snapshot("stuck", ns, "data"), claim("restored", ns, dataSource={
            "apiGroup": "snapshot.storage.k8s.io", "kind": "VolumeSnapshot", "name": "stuck"})])
        wait_for(lambda: (cluster.get_object(SNAP, "VolumeSnapshot", "stuck", ns).get("status") or {})
                 .get("boundVolumeSnapshotContentName"))
        time.sleep(0.5)
        assert cluster.get_object(SNAP, "VolumeSnapshot", "stuck", ns)["status"]["readyToUse"] is False
        assert cluster.get_object("v1", "PersistentVolumeClaim", "restored", ns)["status"]["phase"] == "Pending"


def test_a_class_of_another_driver_or_without_snapshot_class_is_left_alone(cluster, ns, tmp_path):
    cluster.create_objects([{"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "other"},
                             "provisioner": "ebs.csi.aws.com"}])
    with CsiStandIn(cluster, tmp_path / "csi", storage_class="bare-sc", snapshot_class=None) as csi:
        cluster.create_objects([claim("theirs", ns, storageClassName="other"),
                                claim("mine", ns, storageClassName="bare-sc")])
        csi.directory_of(ns, "mine")
        cluster.create_objects([snapshot("nosnapclass", ns, "mine", cls="missing-class")])
        time.sleep(0.3)
        assert not cluster.get_object(SNAP, "VolumeSnapshot", "nosnapclass", ns).get("status")
        assert cluster.get_object("v1", "PersistentVolumeClaim", "theirs", ns)["status"]["phase"] == "Pending"


def test_size_limited_volumes_are_tmpfs_of_the_requested_size(cluster, ns, tmp_path):
    try:
        csi = CsiStandIn(cluster, tmp_path / "csi", size_limited=True).start()
    except RuntimeError as exc:
        pytest.fail(f"this machine cannot mount tmpfs: {exc}")
    try:
        cluster.create_objects([claim("small", ns, size="1Mi")])
        directory = csi.directory_of(ns, "small")
        with pytest.raises(OSError) as caught:
            with open(os.path.join(directory, "big"), "wb") as f:
                for _ in range(4):
                    f.write(b"\0" * (512 * 1024))
                    f.flush()
                    os.fsync(f.fileno())
        assert caught.value.errno == 28  # ENOSPC
    finally:
        csi.stop()
    assert not os.path.ismount(directory)
