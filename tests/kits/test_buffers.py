"""dr/kits/buffers.py: glibc's malloc keeps freed large buffers, measured by the page faults a
loop of 8 MiB buffers costs in a fresh interpreter (a real process, not a mock)."""

from __future__ import annotations

import json
import subprocess
import sys

PROBE = """
import json, resource, sys
from dr.kits.buffers import keep_freed_buffers
took = keep_freed_buffers() if sys.argv[1] == "tuned" else None
data = bytes(8 << 20)
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(64):  # a chunk's piece, its ciphertext and the HTTP piece sent: alive at once, then freed
    piece, sealed, sent = bytearray(data), bytearray(data) + b"tag", bytes(data)
    del piece, sealed, sent
print(json.dumps({"took": took, "faults": resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before}))
"""


def _run(mode: str) -> dict:
    out = subprocess.run([sys.executable, "-c", PROBE, mode], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def test_freed_buffers_are_reused_instead_of_faulted_in_again():
    plain, tuned = _run("plain"), _run("tuned")
    assert tuned["took"] is True  # these machines run glibc
    # untuned, glibc trims the freed buffers off the heap's top and faults them in again
    assert plain["faults"] > 64 * 2048
    assert tuned["faults"] < plain["faults"] // 10
