"""A large layer is streamed registry to registry, and registry into dr's repository: memory
stays bounded (measured in a child process: its own VmHWM), and the PATCH-chunked upload path
is the one taken."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from tests.harness.registries import push_file_blob, push_image

LAYER_MIB = 64

CHILD = textwrap.dedent("""
    import json, sys

    def hwm():  # VmHWM: this program's own peak (ru_maxrss would start at the parent's RSS at fork)
        with open("/proc/self/status") as status:
            return next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
    from dr.kits.oci.client import RegistryClient
    from dr.exporters.images.copying import Copier, Endpoint
    source, dr, digest = sys.argv[1:4]
    before = hwm()
    copier = Copier(parallel_blobs=4, chunk=16 << 20)
    copied = copier.copy(Endpoint(RegistryClient(source, scheme="http"), "team/big"),
                         Endpoint(RegistryClient(dr, scheme="http"), "memory/team/big"), digest, ["1"])
    copier.close()
    peak = hwm()
    print(json.dumps({"before_kib": before, "peak_kib": peak, "copied": copied.bytes_copied}))
""")


@pytest.fixture(scope="module")
def big(tmp_path_factory, registries) -> tuple[dict, str]:
    """A 64 MiB random layer and the image holding it, in the source registry."""
    path = tmp_path_factory.mktemp("big") / "layer.bin"
    with open(path, "wb") as handle:
        for _ in range(LAYER_MIB):
            handle.write(os.urandom(1 << 20))
    source = registries.source.client()
    layer = push_file_blob(source, "team/big", str(path))
    os.unlink(path)
    return layer, push_image(source, "team/big", "1", [layer, b"small layer"])


def _measure(child: str, *argv: str) -> dict:
    done = subprocess.run([sys.executable, "-c", child, *argv], capture_output=True, text=True, timeout=300,
                          cwd=os.getcwd())
    assert done.returncode == 0, done.stderr
    measured = json.loads(done.stdout)
    grew_mib = (measured["peak_kib"] - measured["before_kib"]) / 1024
    assert measured["peak_kib"] < 150 * 1024  # the whole process, interpreter and imports included
    print(f"peak RSS {measured['peak_kib'] // 1024} MiB, grew {grew_mib:.1f} MiB")
    assert grew_mib < 32, f"the copy grew the process by {grew_mib:.0f} MiB for a {LAYER_MIB} MiB layer"
    return measured


def test_a_64_mib_layer_copies_with_bounded_memory(registries, big):
    layer, digest = big
    measured = _measure(CHILD, registries.source.host, registries.dr.host, digest)
    assert measured["copied"] >= LAYER_MIB << 20
    assert registries.dr.client().has_blob("memory/team/big", layer["digest"]) == LAYER_MIB << 20


# The repository writer is given a small in-flight bound (2 uploads of 4 MiB chunks), so what is
# measured is the exporter's streaming: holding the layer whole would grow the process by 64 MiB.
INTO_REPOSITORY = CHILD.split("from dr.kits.oci.client")[0] + textwrap.dedent("""
    from dr.contract import ExportContext
    from dr.exporters.images import ImagesExporter
    from dr.exporters.images.options import ImagesOptions
    from dr.repository.repositories import Repository
    from dr.repository.stores.local import LocalStore
    from dr.repository.writing import SnapshotWriter
    ref, folder = sys.argv[1:3]
    repo = Repository(LocalStore(folder))
    repo.init()
    options = ImagesOptions(store="repository", images=[ref], from_plan=False, signatures=False, referrers=False)
    writer = SnapshotWriter(repo, [], workers=2, chunk_size=4 << 20)
    sink = writer.source("images", "images")
    before = hwm()
    ImagesExporter(ExportContext("images", options, folder)).export(sink)
    assert sink.commit().ok
    peak = hwm()
    writer.close()
    print(json.dumps({"before_kib": before, "peak_kib": peak, "stored": writer.stats["bytes_read"]}))
""")


def test_a_64_mib_layer_goes_into_the_repository_with_bounded_memory(tmp_path, registries, big):
    layer, _ = big
    measured = _measure(INTO_REPOSITORY, f"{registries.source.host}/team/big:1", str(tmp_path / "repo"))
    assert measured["stored"] >= LAYER_MIB << 20
