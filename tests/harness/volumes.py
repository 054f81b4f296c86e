"""A stand-in for a CSI driver with its provisioner and snapshotter sidecars and the snapshot controller.

No real cluster, node or CSI driver can run on the test machines (see the shared TEST-INFRA.md), so
`CsiStandIn` PLAYS THE CSI DRIVER (csi-hostpath's behaviour: every volume is a directory of this
machine) and the controllers around it, against the emulated API server (tests/harness/kube.py):

- on start it installs the UNMODIFIED upstream external-snapshotter CRDs (VolumeSnapshot,
  VolumeSnapshotContent, VolumeSnapshotClass, read at run time from the upstream fixtures) and waits
  until they are served, then creates the StorageClass ``csi-hostpath-sc`` and the
  VolumeSnapshotClass ``csi-hostpath-snapclass`` (either can be left out);
- the external-provisioner's part: a Pending claim of a class whose provisioner is the driver gets
  a directory ``root/pv-<claim uid>`` and a PersistentVolume ``pvc-<uid>`` bound to it (Immediate
  binding); a claim whose dataSource/dataSourceRef is a VolumeSnapshot is provisioned as a copy of
  the snapshot's directory once the snapshot is readyToUse (``cp -a --sparse=always``: modes,
  owners, mtimes, symlinks and holes kept), a claim whose dataSource is a claim as a clone of it;
- the snapshot controller's and csi-snapshotter's part: a VolumeSnapshot of a claim, in a class of
  the driver (or the class annotated as the default), is a copy ``root/snap-<uid>`` of the claim's
  directory, a VolumeSnapshotContent ``snapcontent-<uid>`` and a ready status;
- reclaim policy Delete: a deleted claim (or its namespace) takes its PV and directory with it, a
  deleted VolumeSnapshot its content and directory.

What a real driver and controllers do differently (not emulated): no finalizers (pvc-protection,
snapshot protection) are added, so a claim in use by a pod can be deleted at once; no capacity is
enforced unless ``size_limited`` (a tmpfs of the requested size per volume, root only); a snapshot is
taken at once (``never_ready`` is the knob to keep one from ever being ready); with
``binding_mode="WaitForFirstConsumer"`` (the class's volumeBindingMode) a claim stays Pending until a
pod not ended mounts it, then is annotated with the pod's node as the scheduler would and provisioned
(topology is not checked); no volume expansion, no error statuses on snapshots of missing claims (they
just stay without status); restore size is not checked against the new claim's request.
"""

from __future__ import annotations

import copy
import os
import re
import shutil
import subprocess
import tempfile
import threading
import time
import traceback
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import yaml

from .kube import ApiError, EmulatedCluster, KubeApiEmulator, _now

__all__ = ["CsiStandIn", "SNAPSHOT_CRDS", "parse_quantity"]

SNAPSHOT_GROUP = "snapshot.storage.k8s.io"
# ../shared/fixtures/upstream beside the checkout (tests/upstream_fixtures.py), read at run time.
_PROJECT = Path(__file__).resolve().parents[2]
SNAPSHOT_CRDS = Path(os.environ.get("DR_UPSTREAM_FIXTURES") or _PROJECT.parent / "shared" / "fixtures" / "upstream") \
    / "external-snapshotter" / "crds"
DEFAULT_CLASS_ANNOTATION = "snapshot.storage.kubernetes.io/is-default-class"
MANAGER = "csi-hostpath-stand-in"

_UNITS = {"": 1, "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15, "E": 10**18,
          "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}


def parse_quantity(value: str | int) -> int:
    """A Kubernetes resource quantity ("10Mi", "1G", "512") as a whole number of bytes."""
    m = re.fullmatch(r"([0-9.]+)([kMGTPE]i?|)", str(value).strip())
    if not m:
        raise ValueError(f"not a storage quantity: {value!r}")
    return int(float(m.group(1)) * _UNITS[m.group(2)])


# ---- small helpers over the emulator's store (run on its loop through cluster.call) ------------

def _type(em: KubeApiEmulator, api_version: str, kind: str):
    return em.type_for(api_version, kind)


def list_objects(cluster: EmulatedCluster, api_version: str, kind: str,
                 selector: str = "") -> list[dict[str, Any]]:
    """Like cluster.list_objects, across namespaces, with a label selector; [] when not served."""
    def run(em: KubeApiEmulator) -> list[dict[str, Any]]:
        try:
            rtype, version = _type(em, api_version, kind)
        except KeyError:
            return []
        query = {"labelSelector": selector} if selector else {}
        return [copy.deepcopy(em._render(rtype, version, o)) for o in em._select(rtype, None, query)]
    return cluster.call(run)


def set_status(cluster: EmulatedCluster, obj: dict[str, Any], status: dict[str, Any],
               manager: str = MANAGER) -> dict[str, Any] | None:
    """Merge `status` into the object's status (through its status subresource when it has one)."""
    meta = obj["metadata"]

    def run(em: KubeApiEmulator) -> dict[str, Any] | None:
        rtype, version = _type(em, obj["apiVersion"], obj["kind"])
        try:
            _, new = em.patch_object(rtype, version, meta.get("namespace"), meta["name"],
                                     "application/merge-patch+json", {"status": status},
                                     "status" if "status" in rtype.subresources else None, manager=manager)
        except ApiError as exc:
            if exc.code == 404:
                return None
            raise
        return copy.deepcopy(em._render(rtype, version, new))
    return cluster.call(run)


def patch(cluster: EmulatedCluster, obj: dict[str, Any], body: dict[str, Any], manager: str = MANAGER) -> None:
    """Merge-patch an object; one deleted meanwhile (a controller's race with its owner) is left be."""
    meta = obj["metadata"]

    def run(em: KubeApiEmulator) -> None:
        rtype, version = _type(em, obj["apiVersion"], obj["kind"])
        try:
            em.patch_object(rtype, version, meta.get("namespace"), meta["name"], "application/merge-patch+json",
                            body, manager=manager)
        except ApiError as exc:
            if exc.code != 404:
                raise
    cluster.call(run)


def delete(cluster: EmulatedCluster, api_version: str, kind: str, name: str, namespace: str | None = None) -> None:
    """Delete an object if it is there (a missing one, or a type no longer served, is fine)."""
    def run(em: KubeApiEmulator) -> None:
        try:
            rtype, version = _type(em, api_version, kind)
            em.delete_object(rtype, version, namespace, name, {})
        except KeyError:
            pass
        except ApiError as exc:
            if exc.code != 404:
                raise
    cluster.call(run)


def create(cluster: EmulatedCluster, obj: dict[str, Any]) -> dict[str, Any] | None:
    """Create an object; None when it already exists."""
    try:
        return cluster.create_objects([obj])[0]
    except ApiError as exc:
        if exc.code == 409:
            return None
        raise


def copy_tree(source: str, target: str, linked: bool = False) -> None:
    """Copy a volume's content as a block-level snapshot would keep it: modes, owners, times,
    symlinks, hard links and holes (sparse files stay sparse). `linked` hard-links the files
    instead of copying their bytes (see CsiStandIn's copy_on_write)."""
    os.makedirs(target, exist_ok=True)
    subprocess.run(["cp", "-a", "-l" if linked else "--sparse=always", f"{source}/.", f"{target}/"], check=True,
                   capture_output=True)


class _Background:
    """A polling thread whose failures are kept (and raised by stop())."""

    interval = 0.05

    def __init__(self, name: str) -> None:
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self._name = name
        self.errors: list[str] = []

    def _tick(self) -> None:
        raise NotImplementedError

    def _loop(self) -> None:
        while not self._stopping.is_set():
            try:
                self._tick()
            except Exception:
                if not self._stopping.is_set():
                    self.errors.append(traceback.format_exc())
                    if len(self.errors) > 20:
                        del self.errors[0]
                    time.sleep(0.5)
            self._stopping.wait(self.interval)

    def _start_thread(self) -> None:
        self._thread = threading.Thread(target=self._loop, daemon=True, name=self._name)
        self._thread.start()

    def _stop_thread(self) -> None:
        self._stopping.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
            self._thread = None


class CsiStandIn(_Background):
    """Stands for a CSI driver (csi-hostpath) and its provisioner, snapshotter and snapshot
    controller: volumes and snapshots are directories under `root` (see the module docstring).

    Parameters:
        cluster: the emulated API server (started).
        root: where the volume and snapshot directories go.
        driver: the CSI driver name (provisioner of the StorageClass, driver of the snapshot class).
        storage_class / snapshot_class: names of the classes created on start; None creates none.
        never_ready: VolumeSnapshot names (or a predicate on (namespace, name)) that never become
            readyToUse (no copy is made; restores from them stay Pending).
        size_limited: mount every new volume as a tmpfs of the claim's requested size, so a full
            volume gives a real ENOSPC (root only; start() raises if tmpfs cannot be mounted).
        copy_on_write: snapshots and clones hard-link the files instead of copying them, so that
            taking one costs what a copy-on-write snapshot of a real driver (Ceph RBD, ZFS, LVM
            thin) costs, not a copy of the data (for bench/bench_volumes.py). A snapshot then shares
            its files with the claim: a test that changes a file after the snapshot must not use it.
        install_crds: install the upstream snapshot CRDs (False: the test does, or the cluster has
            no snapshot API at all).
    """

    def __init__(self, cluster: EmulatedCluster, root: str | os.PathLike[str], driver: str = "hostpath.csi.k8s.io",
                 *, storage_class: str | None = "csi-hostpath-sc",
                 snapshot_class: str | None = "csi-hostpath-snapclass",
                 never_ready: Iterable[str] | Callable[[str, str], bool] = (), size_limited: bool = False,
                 install_crds: bool = True, copy_on_write: bool = False, binding_mode: str = "Immediate") -> None:
        super().__init__(f"csi-stand-in-{cluster.name}")
        self.cluster, self.root, self.driver = cluster, os.fspath(root), driver
        self.storage_class, self.snapshot_class = storage_class, snapshot_class
        self.never_ready = never_ready if callable(never_ready) else set(never_ready)
        self.size_limited, self.install_crds = size_limited, install_crds
        self.copy_on_write, self.binding_mode = copy_on_write, binding_mode
        self.volumes: dict[str, dict[str, Any]] = {}  # claim uid -> {namespace, name, pv, dir, mounted}
        self.snapshots: dict[str, dict[str, Any]] = {}  # snapshot uid -> {namespace, name, content, dir, ready}
        self._lock = threading.Lock()

    # ---- lifecycle -----------------------------------------------------------------------

    def start(self) -> "CsiStandIn":
        os.makedirs(self.root, exist_ok=True)
        if self.size_limited:
            self._check_tmpfs()
        if self.install_crds:
            self._install_crds()
        if self.storage_class:
            create(self.cluster, {
                "apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
                "metadata": {"name": self.storage_class}, "provisioner": self.driver,
                "reclaimPolicy": "Delete", "volumeBindingMode": self.binding_mode, "allowVolumeExpansion": True})
        if self.snapshot_class:
            create(self.cluster, {
                "apiVersion": f"{SNAPSHOT_GROUP}/v1", "kind": "VolumeSnapshotClass",
                "metadata": {"name": self.snapshot_class}, "driver": self.driver, "deletionPolicy": "Delete"})
        self._start_thread()
        return self

    def stop(self) -> None:
        self._stop_thread()
        with self._lock:
            for volume in self.volumes.values():
                if volume.get("mounted"):
                    _umount(volume["dir"])
            self.volumes.clear()
            self.snapshots.clear()

    def __enter__(self) -> "CsiStandIn":
        return self.start()

    def __exit__(self, exc_type: Any, *_: Any) -> None:
        self.stop()
        if exc_type is None and self.errors:
            raise RuntimeError("the CSI stand-in failed:\n" + "\n".join(self.errors))

    def _install_crds(self) -> None:
        files = sorted(SNAPSHOT_CRDS.glob("*.yaml"))
        if not files:
            raise RuntimeError(f"upstream fixture missing: {SNAPSHOT_CRDS}/*.yaml; run "
                               "scripts/fetch-upstream-fixtures (set DR_UPSTREAM_FIXTURES to put them elsewhere)")
        for file in files:
            for doc in yaml.safe_load_all(file.read_text()):
                if doc:
                    create(self.cluster, doc)
        plurals = ("volumesnapshots", "volumesnapshotcontents", "volumesnapshotclasses")
        deadline = time.monotonic() + 30
        while not self.cluster.call(lambda em: all((SNAPSHOT_GROUP, p) in em.types for p in plurals)):
            if time.monotonic() > deadline:
                raise RuntimeError("the snapshot CRDs were not served within 30 s")
            time.sleep(0.02)

    def _check_tmpfs(self) -> None:
        if os.geteuid() != 0:
            raise RuntimeError("size_limited needs root (to mount a tmpfs per volume)")
        probe = tempfile.mkdtemp(prefix="tmpfs-probe-", dir=self.root)
        try:
            _mount_tmpfs(probe, 1 << 20)
            _umount(probe)
        finally:
            os.rmdir(probe)

    # ---- what tests ask ------------------------------------------------------------------

    def directory_of(self, namespace: str, claim: str, timeout: float = 10) -> str:
        """The directory holding claim `namespace/claim`'s volume, once it is bound."""
        deadline = time.monotonic() + timeout
        while True:
            with self._lock:
                for volume in self.volumes.values():
                    if (volume["namespace"], volume["name"]) == (namespace, claim):
                        return volume["dir"]
            if time.monotonic() > deadline:
                raise TimeoutError(f"claim {namespace}/{claim} was not bound within {timeout} s"
                                   + ("; stand-in errors:\n" + "\n".join(self.errors) if self.errors else ""))
            time.sleep(0.02)

    def snapshot_directory(self, namespace: str, snapshot: str) -> str | None:
        with self._lock:
            for snap in self.snapshots.values():
                if (snap["namespace"], snap["name"]) == (namespace, snapshot):
                    return snap["dir"]
        return None

    # ---- the controllers' loop ---------------------------------------------------------------

    def _tick(self) -> None:
        classes = {c["metadata"]["name"]: c for c in list_objects(self.cluster, "storage.k8s.io/v1", "StorageClass")}
        snap_classes = {c["metadata"]["name"]: c
                        for c in list_objects(self.cluster, f"{SNAPSHOT_GROUP}/v1", "VolumeSnapshotClass")}
        claims = list_objects(self.cluster, "v1", "PersistentVolumeClaim")
        snapshots = list_objects(self.cluster, f"{SNAPSHOT_GROUP}/v1", "VolumeSnapshot")
        claim_uids = {c["metadata"]["uid"] for c in claims}
        snapshot_uids = {s["metadata"]["uid"] for s in snapshots}
        for uid in [u for u in self.volumes if u not in claim_uids]:
            self._release_volume(uid)
        for uid in [u for u in self.snapshots if u not in snapshot_uids]:
            self._release_snapshot(uid)
        for snapshot in snapshots:
            if snapshot["metadata"]["uid"] not in self.snapshots:
                self._take_snapshot(snapshot, snap_classes)
        waiting = {name for name, c in classes.items() if c.get("volumeBindingMode") == "WaitForFirstConsumer"}
        consumers = self._consumers() if waiting else {}
        for claim in claims:
            meta = claim["metadata"]
            if meta["uid"] in self.volumes or meta.get("deletionTimestamp"):
                continue
            if (claim.get("spec") or {}).get("storageClassName") in waiting:
                node = consumers.get((meta.get("namespace"), meta["name"]))
                if node is None:
                    continue  # WaitForFirstConsumer: Pending until a pod that mounts it is scheduled
                patch(self.cluster, claim, {"metadata": {"annotations": {"volume.kubernetes.io/selected-node": node}}})
            self._provision(claim, classes)

    def _consumers(self) -> dict[tuple[str, str], str]:
        """{(namespace, claim): node} of the pods not ended that mount a claim: the scheduler's
        part for WaitForFirstConsumer (it picks the pod's node, or this stand-in's one node)."""
        found = {}
        for pod in list_objects(self.cluster, "v1", "Pod"):
            if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
                continue
            for volume in (pod.get("spec") or {}).get("volumes") or []:
                claim = (volume.get("persistentVolumeClaim") or {}).get("claimName")
                if claim:
                    found[(pod["metadata"].get("namespace"), claim)] = pod["spec"].get("nodeName") or "stand-in-node"
        return found

    def _mine(self, claim: dict[str, Any], classes: dict[str, dict[str, Any]]) -> bool:
        spec = claim.get("spec") or {}
        cls = classes.get(spec.get("storageClassName") or "")
        return cls is not None and cls.get("provisioner") == self.driver and not spec.get("volumeName")

    def _provision(self, claim: dict[str, Any], classes: dict[str, dict[str, Any]]) -> None:
        if not self._mine(claim, classes):
            return
        meta, spec = claim["metadata"], claim["spec"]
        source = spec.get("dataSourceRef") or spec.get("dataSource")
        copy_from = None
        if source:
            if source.get("kind") == "VolumeSnapshot" and source.get("apiGroup") == SNAPSHOT_GROUP:
                snap = next((s for s in self.snapshots.values()
                             if (s["namespace"], s["name"]) == (meta["namespace"], source["name"])), None)
                if snap is None or not snap["ready"]:
                    return  # Pending until the snapshot is ready to use
                copy_from = snap["dir"]
            elif source.get("kind") == "PersistentVolumeClaim" and not source.get("apiGroup"):
                clone = next((v for v in self.volumes.values()
                              if (v["namespace"], v["name"]) == (meta["namespace"], source["name"])), None)
                if clone is None:
                    return
                copy_from = clone["dir"]
            else:
                return  # a populator's data source: not this driver's business
        uid = meta["uid"]
        request = ((spec.get("resources") or {}).get("requests") or {}).get("storage", "1Gi")
        directory = os.path.join(self.root, f"pv-{uid}")
        os.makedirs(directory, exist_ok=True)
        os.chmod(directory, 0o777)
        mounted = False
        if self.size_limited:
            _mount_tmpfs(directory, parse_quantity(request))
            mounted = True
        if copy_from:
            copy_tree(copy_from, directory, linked=self.copy_on_write)
        pv_name = f"pvc-{uid}"
        volume = {"namespace": meta["namespace"], "name": meta["name"], "pv": pv_name, "dir": directory,
                  "mounted": mounted, "request": request}
        with self._lock:
            self.volumes[uid] = volume
        access = spec.get("accessModes") or ["ReadWriteOnce"]
        create(self.cluster, {
            "apiVersion": "v1", "kind": "PersistentVolume",
            "metadata": {"name": pv_name, "annotations": {"pv.kubernetes.io/provisioned-by": self.driver}},
            "spec": {"csi": {"driver": self.driver, "volumeHandle": directory, "fsType": "ext4"},
                     "capacity": {"storage": request}, "accessModes": access,
                     "claimRef": {"kind": "PersistentVolumeClaim", "apiVersion": "v1", "namespace": meta["namespace"],
                                  "name": meta["name"], "uid": uid},
                     "storageClassName": spec["storageClassName"], "persistentVolumeReclaimPolicy": "Delete",
                     "volumeMode": spec.get("volumeMode", "Filesystem")}})
        pv = self.cluster.get_object("v1", "PersistentVolume", pv_name)
        if pv is not None:
            set_status(self.cluster, pv, {"phase": "Bound"})
        patch(self.cluster, claim, {"spec": {"volumeName": pv_name}, "metadata": {"annotations": {
            "pv.kubernetes.io/bind-completed": "yes", "pv.kubernetes.io/bound-by-controller": "yes",
            "volume.kubernetes.io/storage-provisioner": self.driver}}})
        set_status(self.cluster, claim, {"phase": "Bound", "capacity": {"storage": request}, "accessModes": access})

    def _release_volume(self, uid: str) -> None:
        with self._lock:
            volume = self.volumes.pop(uid)
        delete(self.cluster, "v1", "PersistentVolume", volume["pv"])
        if volume.get("mounted"):
            _umount(volume["dir"])
        shutil.rmtree(volume["dir"], ignore_errors=True)

    def _snapshot_class(self, snapshot: dict[str, Any], classes: dict[str, dict[str, Any]]) -> dict[str, Any] | None:
        name = (snapshot.get("spec") or {}).get("volumeSnapshotClassName")
        if name:
            return classes.get(name)
        defaults = [c for c in classes.values() if c.get("driver") == self.driver
                    and (c["metadata"].get("annotations") or {}).get(DEFAULT_CLASS_ANNOTATION) == "true"]
        return defaults[0] if len(defaults) == 1 else None

    def _take_snapshot(self, snapshot: dict[str, Any], classes: dict[str, dict[str, Any]]) -> None:
        cls = self._snapshot_class(snapshot, classes)
        source = ((snapshot.get("spec") or {}).get("source") or {}).get("persistentVolumeClaimName")
        meta = snapshot["metadata"]
        if cls is None or cls.get("driver") != self.driver or not source or meta.get("deletionTimestamp"):
            return
        volume = next((v for v in self.volumes.values() if (v["namespace"], v["name"]) == (meta["namespace"], source)),
                      None)
        if volume is None:
            return  # the claim is missing or not bound yet
        uid, name = meta["uid"], meta["name"]
        ready = not (self.never_ready(meta["namespace"], name) if callable(self.never_ready)
                     else name in self.never_ready)
        directory = os.path.join(self.root, f"snap-{uid}")
        if ready:
            copy_tree(volume["dir"], directory, linked=self.copy_on_write)
        content_name = f"snapcontent-{uid}"
        with self._lock:
            self.snapshots[uid] = {"namespace": meta["namespace"], "name": name, "content": content_name,
                                   "dir": directory, "ready": ready}
        size = parse_quantity(volume["request"])
        create(self.cluster, {
            "apiVersion": f"{SNAPSHOT_GROUP}/v1", "kind": "VolumeSnapshotContent",
            "metadata": {"name": content_name},
            "spec": {"driver": self.driver, "deletionPolicy": cls.get("deletionPolicy", "Delete"),
                     "source": {"volumeHandle": volume["dir"]}, "volumeSnapshotClassName": cls["metadata"]["name"],
                     "sourceVolumeMode": "Filesystem",
                     "volumeSnapshotRef": {"apiVersion": f"{SNAPSHOT_GROUP}/v1", "kind": "VolumeSnapshot",
                                           "name": name, "namespace": meta["namespace"], "uid": uid,
                                           "resourceVersion": meta["resourceVersion"]}}})
        content = self.cluster.get_object(f"{SNAPSHOT_GROUP}/v1", "VolumeSnapshotContent", content_name)
        created = _now()
        if content is not None:
            status: dict[str, Any] = {"readyToUse": ready}
            if ready:
                status |= {"snapshotHandle": directory, "restoreSize": size, "creationTime": time.time_ns()}
            set_status(self.cluster, content, status)
        status = {"boundVolumeSnapshotContentName": content_name, "readyToUse": ready}
        if ready:
            status |= {"creationTime": created, "restoreSize": volume["request"]}
        set_status(self.cluster, snapshot, status)

    def _release_snapshot(self, uid: str) -> None:
        with self._lock:
            snap = self.snapshots.pop(uid)
        delete(self.cluster, f"{SNAPSHOT_GROUP}/v1", "VolumeSnapshotContent", snap["content"])
        shutil.rmtree(snap["dir"], ignore_errors=True)


def _mount_tmpfs(directory: str, size: int) -> None:
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={max(size, 4096)},mode=0777", "tmpfs", directory],
                          capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f"cannot mount a tmpfs on {directory} (size_limited needs it): {done.stderr.strip()}")


def _umount(directory: str) -> None:
    subprocess.run(["umount", "-l", directory], capture_output=True)
