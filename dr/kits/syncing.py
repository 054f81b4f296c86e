"""One flush of a filesystem (syncfs), for writers that stage many files and need them durable
at one point: a local repository publishing its batched blobs (places/local.py), the volumes
mover committing a restored tree. The standard library only: the mover imports it in the
volume's pod, where it loads nothing else of dr.
"""

from __future__ import annotations

import ctypes
import os
from typing import Iterable


def sync_filesystem(directory: str, fallback: Iterable[str]) -> None:
    """syncfs(2) of the filesystem holding `directory`: one flush for everything written to it,
    where an fsync per file costs a journal commit each. Where syncfs is not there (not Linux),
    each path of `fallback` (files or directories; a generator is only run then) is fsynced."""
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        if getattr(libc, "syncfs", None) is not None and libc.syncfs(fd) == 0:
            return
    except OSError:
        pass
    finally:
        os.close(fd)
    for path in fallback:
        each = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        try:
            os.fsync(each)
        finally:
            os.close(each)
