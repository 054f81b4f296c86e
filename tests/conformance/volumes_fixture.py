"""The volumes exporter's ConformanceFixture: claims of an emulated cluster, restored into new
emulated clusters. THE CSI DRIVER AND THE KUBELET ARE STAND-INS (tests/harness/volumes.py,
tests/harness/jobs.py): a claim is a local directory, the mover Job's container a local process."""

from __future__ import annotations

import contextlib
import os
import sys
from typing import Any, Hashable

from dr.exporters.volumes import VolumesExporter
from dr.exporters.volumes.restoring import items_of
from dr.testing import ConformanceFixture

IMAGE = "registry.dr.example/platform/dr:0.9.0"
CLAIMS = (("qdrant", "data-qdrant-0"), ("mlflow", "pg-data"))


def _tree(folder: str) -> tuple:
    out = []
    for root, dirs, files in os.walk(folder):
        dirs.sort()
        for name in sorted(dirs + files):
            path = os.path.join(root, name)
            st = os.lstat(path)
            facts = [os.path.relpath(path, folder), st.st_mode, st.st_uid, st.st_gid]
            if os.path.islink(path):
                facts.append(os.readlink(path))
            elif os.path.isfile(path):
                with open(path, "rb") as handle:
                    facts += [st.st_mtime_ns, handle.read()]
            out.append(tuple(facts))
    return tuple(out)


class VolumesFixture(ConformanceFixture):
    exporter = VolumesExporter

    def __init__(self) -> None:
        self.stack = contextlib.ExitStack()
        self.clusters: dict[str, tuple[Any, Any]] = {}

    def _cluster(self, name: str) -> str:
        from tests.harness import EmulatedCluster, write_kubeconfig
        from tests.harness.jobs import JobRunner
        from tests.harness.volumes import CsiStandIn

        cluster = self.stack.enter_context(EmulatedCluster(name=name))
        csi = self.stack.enter_context(CsiStandIn(cluster, os.path.join(self.workdir, f"csi-{name}")))
        self.stack.enter_context(JobRunner(cluster, csi, os.path.join(self.workdir, f"pods-{name}"),
                                           programs={"python": sys.executable}))
        self.clusters[name] = (cluster, csi)
        return write_kubeconfig(os.path.join(self.workdir, f"kubeconfig-{name}"), {name: cluster})

    def build_source(self, workdir: str) -> None:
        self.workdir = workdir
        self.kubeconfig = self._cluster("source")
        cluster, csi = self.clusters["source"]
        for namespace, name in CLAIMS:
            cluster.create_objects([
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}},
                {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name, "namespace": namespace},
                 "spec": {"storageClassName": "csi-hostpath-sc", "accessModes": ["ReadWriteOnce"],
                          "resources": {"requests": {"storage": "50Mi"}}}}])
            folder = csi.directory_of(namespace, name)
            os.makedirs(os.path.join(folder, "segments/empty"))
            for n in range(3):
                with open(os.path.join(folder, f"segments/{n}.bin"), "wb") as handle:
                    handle.write(bytes([n]) * (70_000 + n))
            os.symlink("segments/0.bin", os.path.join(folder, "latest"))

    def source_options(self) -> dict[str, Any]:
        return {"kubeconfig": self.kubeconfig, "context": "source", "image": IMAGE,
                "namespaces": [ns for ns, _ in CLAIMS]}

    def broken_options(self) -> dict[str, Any]:
        gone = os.path.join(self.workdir, "kubeconfig-gone")
        with open(gone, "w") as handle:
            handle.write('{"apiVersion": "v1", "kind": "Config", "current-context": "gone", '
                         '"clusters": [{"name": "gone", "cluster": {"server": "http://127.0.0.1:9"}}], '
                         '"users": [{"name": "gone", "user": {"token": "t"}}], '
                         '"contexts": [{"name": "gone", "context": {"cluster": "gone", "user": "gone"}}]}')
        return {"kubeconfig": gone, "image": IMAGE}

    def destination(self) -> str:
        name = f"dest-{len(self.clusters)}"
        return self._cluster(name) + f":{name}"

    def _claims_of(self, to: str) -> tuple:
        cluster, csi = self.clusters[to.rsplit(":", 1)[1]]
        found = []
        for namespace, name in CLAIMS:
            if cluster.get_object("v1", "PersistentVolumeClaim", name, namespace):
                found.append((namespace, name, _tree(csi.directory_of(namespace, name))))
        return tuple(found)

    def fingerprint(self, to: str) -> Hashable:
        return self._claims_of(to)

    def perturb(self, to: str) -> str:
        _, csi = self.clusters[to.rsplit(":", 1)[1]]
        namespace, name = CLAIMS[0]
        with open(os.path.join(csi.directory_of(namespace, name), "segments/1.bin"), "ab") as handle:
            handle.write(b"changed at the destination")
        return f"{namespace}/{name}/segments/1.bin"

    def source_fingerprint(self) -> Hashable:
        _, csi = self.clusters["source"]
        return tuple((ns, name, _tree(csi.directory_of(ns, name))) for ns, name in CLAIMS)

    def change_source(self) -> str:
        _, csi = self.clusters["source"]
        namespace, name = CLAIMS[1]
        with open(os.path.join(csi.directory_of(namespace, name), "segments/0.bin"), "ab") as handle:
            handle.write(b"more")
        # the files are small: they are in a pack, named by its first file (a directory's first
        # small file always begins one)
        return f"{namespace}/{name}/segments/0.bin"

    def expected_items(self, artifacts, reader) -> set[str]:
        """A pack of small files is restored, and reported, file by file."""
        return {item for artifact in artifacts for item, _ in items_of(artifact)}

    def close(self) -> None:
        self.stack.close()
