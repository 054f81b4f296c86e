"""Keep the memory of freed large buffers in the process instead of handing it back to the
kernel after each one (glibc's malloc; elsewhere nothing is changed).

Why: dr's data paths allocate and free a few 8 MiB buffers per chunk (the piece, its age
ciphertext, HTTP pieces). glibc gives a buffer that large its own mmap, or trims the top of the
heap once it is freed, so every chunk's pages are faulted in again, and on these machines a
fresh page costs: a 1 GiB volume restore took 328,000 page faults and 1.25 s of system time,
33,000 and 0.46 s with freed buffers kept (docs/benchmarks.md, 2026-12-06). Peak memory does
not grow: the memory kept is what the next chunk reuses. The standard library only (the volume
mover calls it too).
"""

from __future__ import annotations

import sys

M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # glibc's malloc.h
LARGEST_FROM_HEAP = 32 << 20  # glibc's own ceiling for the mmap threshold on 64-bit
KEPT_AT_TOP = 64 << 20  # free memory at the heap's top before it is trimmed


def keep_freed_buffers() -> bool:
    """Tune glibc's malloc once; whether it took (False off glibc, or when refused)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        libc = ctypes.CDLL(None)
        if not hasattr(libc, "gnu_get_libc_version"):  # musl (Alpine) has no such tuning
            return False
        return bool(libc.mallopt(M_MMAP_THRESHOLD, LARGEST_FROM_HEAP)) and \
            bool(libc.mallopt(M_TRIM_THRESHOLD, KEPT_AT_TOP))
    except (OSError, AttributeError):
        return False
