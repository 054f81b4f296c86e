"""A large layer is streamed registry to registry: memory stays bounded (measured in a child
process: its own VmHWM), and the PATCH-chunked upload path is the one taken."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

from tests.harness.registries import push_file_blob, push_image

LAYER_MIB = 64

CHILD = textwrap.dedent("""
    import json, sys

    def hwm():  # VmHWM: this program's own peak (ru_maxrss would start at the parent's RSS at fork)
        with open("/proc/self/status") as status:
            return next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
    from dr.exporters.images.client import Registry
    from dr.exporters.images.copying import Copier, Endpoint
    source, dr, digest = sys.argv[1:4]
    before = hwm()
    copier = Copier(parallel_blobs=4, chunk=16 << 20)
    copied = copier.copy(Endpoint(Registry(source, scheme="http"), "team/big"),
                         Endpoint(Registry(dr, scheme="http"), "memory/team/big"), digest, ["1"])
    copier.close()
    peak = hwm()
    print(json.dumps({"before_kib": before, "peak_kib": peak, "copied": copied.bytes_copied}))
""")


def test_a_64_mib_layer_copies_with_bounded_memory(tmp_path, registries):
    big = tmp_path / "layer.bin"
    with open(big, "wb") as handle:
        for _ in range(LAYER_MIB):
            handle.write(os.urandom(1 << 20))
    source = registries.source.client()
    layer = push_file_blob(source, "team/big", str(big))
    digest = push_image(source, "team/big", "1", [layer, b"small layer"])
    done = subprocess.run([sys.executable, "-c", CHILD, registries.source.host, registries.dr.host, digest],
                          capture_output=True, text=True, timeout=300, cwd=os.getcwd())
    assert done.returncode == 0, done.stderr
    measured = json.loads(done.stdout)
    assert measured["copied"] >= LAYER_MIB << 20
    grew_mib = (measured["peak_kib"] - measured["before_kib"]) / 1024
    assert measured["peak_kib"] < 150 * 1024  # the whole process, interpreter and imports included
    print(f"peak RSS {measured['peak_kib'] // 1024} MiB, grew {grew_mib:.1f} MiB")
    assert grew_mib < 32, f"the copy grew the process by {grew_mib:.0f} MiB for a {LAYER_MIB} MiB layer"
    assert registries.dr.client().has_blob("memory/team/big", layer["digest"]) == LAYER_MIB << 20
