"""Files at relative paths under a root: what every place lists, and the safe way to name them.

In the kit (dr.kits.places), under every place and every user of one: a listing is FileStats, a
path is checked by check_relative_path before storage is touched, and LocalTree walks and reads
a directory (LocalPlace lists and reads through it; the checkpoint formats read trees with it).
"""

from __future__ import annotations

import os
import stat as stat_mod
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator


class UnsafePath(ValueError):
    """A path that is not relative, or that leaves its root."""


def check_relative_path(path: Any) -> str:
    """A path must stay inside its root: an untrusted listing or index must not make us stat or
    read `/etc/...` or `../other-run/...`."""
    if not isinstance(path, str) or not path or path.startswith("/") or "\\" in path or "\0" in path:
        raise UnsafePath(f"path {path!r} is not a relative path")
    if any(part in ("", ".", "..") for part in path.split("/")):
        raise UnsafePath(f"path {path!r} leaves its root directory")
    return path


@dataclass(frozen=True)
class FileStat:
    """One regular file: '/'-separated path relative to the tree root, size, mtime in ns."""

    path: str
    size: int
    mtime_ns: int

    @property
    def name(self) -> str:
        return self.path.rsplit("/", 1)[-1]


class LocalTree:
    """A FileTree over a local directory. Symlinks are not followed: a checkpoint tree's
    `latest -> step_N` links would otherwise list (and back up) the same data twice, and a
    link must not lead the reader outside the root."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)

    def __repr__(self) -> str:
        return f"LocalTree({str(self.root)!r})"

    def list_files(self, prefix: str = "") -> Iterator[FileStat]:
        base = self._abs(prefix) if prefix else self.root
        for dirpath, dirnames, filenames in os.walk(base):
            dirnames.sort()
            for fname in sorted(filenames):
                full = os.path.join(dirpath, fname)
                try:
                    st = os.lstat(full)
                except FileNotFoundError:  # removed while we walk: a writer is busy
                    continue
                if stat_mod.S_ISREG(st.st_mode):
                    rel = Path(full).relative_to(self.root).as_posix()
                    yield FileStat(rel, st.st_size, st.st_mtime_ns)

    def read(self, path: str, start: int, length: int) -> bytes:
        # O_NOFOLLOW: a file swapped for a symlink after listing is refused, not followed.
        fd = os.open(self._abs(path), os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        with os.fdopen(fd, "rb") as f:
            f.seek(start)
            return f.read(length)

    def _abs(self, path: str) -> Path:
        return self.root / check_relative_path(path)
