"""The file-tree protocol checkpoint discovery and completeness need, and a local implementation.

Why a protocol: checkpoints live on local or network filesystems and in object stores. The
checks need only two things, "list files with size and mtime" and "read a byte range", so an
S3 tree is list_objects_v2 (Key, Size, LastModified) plus a ranged GetObject. Ranges matter:
a zip central directory or a safetensors header is a few KiB at one end of a multi-GB file.
"""

from __future__ import annotations

import io
import os
import stat as stat_mod
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator, Protocol

from dr.exporters.checkpoints.formats.dcp_metadata import check_relative_path


@dataclass(frozen=True)
class FileStat:
    """One regular file: '/'-separated path relative to the tree root, size, mtime in ns."""

    path: str
    size: int
    mtime_ns: int

    @property
    def name(self) -> str:
        return self.path.rsplit("/", 1)[-1]


class FileTree(Protocol):
    """Where checkpoints are looked for. Implementations must be read-only."""

    def list_files(self, prefix: str = "") -> Iterable[FileStat]:
        """Every regular file under directory `prefix` ('' = the whole tree), recursively."""

    def read(self, path: str, start: int, length: int) -> bytes:
        """Up to `length` bytes of `path` from `start`; fewer only at end of file.
        FileNotFoundError if the file is gone."""


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


def as_tree(root: FileTree | str | os.PathLike[str]) -> FileTree:
    """Let callers pass a plain local path wherever a tree is expected."""
    return LocalTree(root) if isinstance(root, (str, os.PathLike)) else root


def parent_of(path: str) -> str:
    return path.rsplit("/", 1)[0] if "/" in path else ""


def listing(tree: FileTree, prefix: str) -> dict[str, FileStat]:
    """The files under `prefix`, keyed by their path relative to `prefix`."""
    cut = len(prefix) + 1 if prefix else 0
    return {f.path[cut:]: f for f in tree.list_files(prefix)}


class SeekableReader(io.RawIOBase):
    """Position bookkeeping for a read-only, seekable raw file of known size; subclasses
    implement readinto from self._pos. Seeks are clamped to [0, size]."""

    def __init__(self, size: int) -> None:
        super().__init__()
        self._size, self._pos = size, 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: self._size}[whence]
        self._pos = min(max(0, base + offset), self._size)
        return self._pos


class RangeFile(SeekableReader):
    """A seekable read-only file over tree.read, so `zipfile` can read a central directory
    from an object store without downloading the archive."""

    def __init__(self, tree: FileTree, path: str, size: int) -> None:
        super().__init__(size)
        self._tree, self._path = tree, path

    def readinto(self, buffer) -> int:  # type: ignore[no-untyped-def]
        want = min(len(buffer), max(0, self._size - self._pos))
        data = self._tree.read(self._path, self._pos, want) if want else b""
        buffer[: len(data)] = data
        self._pos += len(data)
        return len(data)
