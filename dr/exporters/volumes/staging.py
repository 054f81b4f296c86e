"""The mover's writing side: what /write puts into the staging directory on the volume, checked
against the digests dr sent, made durable, and what /commit renames into place (mover.py serves
it). A workload never sees a half-written tree. The standard library only, as mover.py.
"""

from __future__ import annotations

import hashlib
import os
import shutil

from dr.exporters.volumes.movertree import CHUNK, DIR_FLAGS, READ_FLAGS, open_under, safe_parts
from dr.exporters.volumes.wire import REPLACED, STAGING, Entry, WireError, read_line
from dr.kits.syncing import fsync_all

BLOCK = 4096  # a run of zeros this long, aligned, is written as a hole in a sparse file
ZEROS = bytes(BLOCK)


class Staging:
    """What /write puts on the volume before /commit renames it into place."""

    def __init__(self, root: str):
        self.root = root
        self.dir = os.path.join(root, STAGING)
        self.entries: list[Entry] = []

    def reset(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)
        os.mkdir(self.dir, 0o700)
        self.entries = []

    def write(self, stream) -> dict[str, str]:
        """Every frame of the request into staging; the digests of the files as read back."""
        self.reset()
        while (header := read_line(stream)) is not None:
            entry = Entry.from_json(header)
            self._write_one(entry, stream)
            self.entries.append(entry)
        for entry in reversed(self.entries):  # children first: a directory's mtime is set last
            self._facts(entry)
        # what /commit renames into place is on the disk: every staged file and directory fsynced,
        # 16 at a time (syncfs would also wait for all else written to the filesystem, which on
        # a hostPath or local-path volume is the node's own disk)
        fsync_all([self.dir] + [os.path.join(self.dir, e.path) for e in self.entries
                                if e.kind in ("file", "directory") and e.path != "."])
        return {e.path: file_digest(self.dir, e.path) for e in self.entries if e.kind == "file"}

    def _parent(self, path: str) -> tuple[int, str]:
        """(an fd of the staged entry's directory, opened without following symlinks, its name)."""
        parts = safe_parts(path)
        return open_under(self.dir, "/".join(parts[:-1]) or ".", DIR_FLAGS), parts[-1]

    def _write_one(self, entry: Entry, stream) -> None:
        if entry.path == ".":
            return
        parent, name = self._parent(entry.path)
        try:
            if entry.kind == "directory":
                os.mkdir(name, 0o700, dir_fd=parent)
            elif entry.kind == "symlink":
                os.symlink(entry.target, name, dir_fd=parent)
            else:
                fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600,
                             dir_fd=parent)
                with os.fdopen(fd, "wb") as handle:
                    self._fill(entry, handle, stream)
        finally:
            os.close(parent)

    @staticmethod
    def _fill(entry: Entry, handle, stream) -> None:
        digest, left = hashlib.sha256(), entry.size
        while left:
            data = stream.read(min(CHUNK, left))
            if not data:
                raise WireError(f"{entry.path}: the stream ended inside the file")
            digest.update(data)
            _put(handle, data, entry.sparse)
            left -= len(data)
        handle.truncate(entry.size)  # a hole at the end still counts in the size
        trailer = read_line(stream) or {}
        if trailer.get("sha256") != digest.hexdigest():
            raise WireError(f"{entry.path}: the bytes received are not the catalog's")

    def _facts(self, entry: Entry) -> None:
        if entry.path == ".":
            return  # the root's facts are set on the volume's root at commit
        parent, name = self._parent(entry.path)
        try:
            if os.geteuid() == 0:
                os.chown(name, entry.uid, entry.gid, dir_fd=parent, follow_symlinks=False)
            if entry.kind != "symlink":
                os.chmod(name, entry.mode, dir_fd=parent)
            os.utime(name, ns=(entry.mtime_ns, entry.mtime_ns), dir_fd=parent, follow_symlinks=False)
        finally:
            os.close(parent)

    def commit(self) -> int:
        """Each staged top-level name replaces the volume's; then the root's own facts."""
        placed = 0
        old = os.path.join(self.root, REPLACED)
        shutil.rmtree(old, ignore_errors=True)
        os.mkdir(old, 0o700)
        for name in sorted(os.listdir(self.dir)):
            here = os.path.join(self.root, name)
            if os.path.lexists(here):
                os.rename(here, os.path.join(old, name))
            os.rename(os.path.join(self.dir, name), here)
            placed += 1
        root_entry = next((e for e in self.entries if e.path == "."), None)
        os.rmdir(self.dir)
        shutil.rmtree(old, ignore_errors=True)
        if root_entry is not None:
            if os.geteuid() == 0:
                os.lchown(self.root, root_entry.uid, root_entry.gid)
            os.chmod(self.root, root_entry.mode)
            os.utime(self.root, ns=(root_entry.mtime_ns, root_entry.mtime_ns))
        return placed


def _put(handle, data: bytes, sparse: bool) -> None:
    """Write data; in a sparse file, aligned all-zero blocks become holes (seek past them)."""
    if not sparse:
        handle.write(data)
        return
    for start in range(0, len(data), BLOCK):
        block = data[start:start + BLOCK]
        if block == ZEROS[:len(block)] and len(block) == BLOCK:
            handle.seek(BLOCK, os.SEEK_CUR)
        else:
            handle.write(block)


def file_digest(root: str, path: str) -> str:
    digest = hashlib.sha256()
    with os.fdopen(open_under(root, path, READ_FLAGS), "rb") as handle:
        while data := handle.read(CHUNK):
            digest.update(data)
    return digest.hexdigest()
