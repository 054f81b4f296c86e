"""The file-tree protocol checkpoint discovery and completeness need, and a local implementation.

Why a protocol: checkpoints live on local or network filesystems and in object stores. The
checks need only two things, "list files with size and mtime" and "read a byte range", so an
S3 tree is list_objects_v2 (Key, Size, LastModified) plus a ranged GetObject. Ranges matter:
a zip central directory or a safetensors header is a few KiB at one end of a multi-GB file.
"""

from __future__ import annotations

import os
from typing import Iterable, Protocol

from dr.kits.places.bodies import SeekableReader
from dr.kits.places.files import FileStat, LocalTree


class FileTree(Protocol):
    """Where checkpoints are looked for. Implementations must be read-only."""

    def list_files(self, prefix: str = "") -> Iterable[FileStat]:
        """Every regular file under directory `prefix` ('' = the whole tree), recursively."""

    def read(self, path: str, start: int, length: int) -> bytes:
        """Up to `length` bytes of `path` from `start`; fewer only at end of file.
        FileNotFoundError if the file is gone."""


def as_tree(root: FileTree | str | os.PathLike[str]) -> FileTree:
    """Let callers pass a plain local path wherever a tree is expected."""
    return LocalTree(root) if isinstance(root, (str, os.PathLike)) else root


def parent_of(path: str) -> str:
    return path.rsplit("/", 1)[0] if "/" in path else ""


def listing(tree: FileTree, prefix: str) -> dict[str, FileStat]:
    """The files under `prefix`, keyed by their path relative to `prefix`."""
    cut = len(prefix) + 1 if prefix else 0
    return {f.path[cut:]: f for f in tree.list_files(prefix)}


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
