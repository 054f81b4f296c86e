"""The mover's writing side: what /write puts into the staging directory on the volume, checked
against the digests dr sent, made durable, and what /commit renames into place (mover.py serves
it). A workload never sees a half-written tree. The standard library only, as mover.py.
"""

from __future__ import annotations

import collections
import hashlib
import os
import re
import shutil
from concurrent.futures import ThreadPoolExecutor

from dr.exporters.volumes.movertree import CHUNK, READ_FLAGS, OpenFolders, open_under
from dr.exporters.volumes.wire import REPLACED, STAGING, Entry, WireError, read_line
from dr.kits.syncing import FSYNC_THREADS, fsync_all, syncfs

BLOCK = 4096  # a run of zeros this long, aligned, is written as a hole in a sparse file
ZEROS = bytes(BLOCK)
FINISHING = 4 * FSYNC_THREADS  # written files waiting for their fsync and read-back, at most
MOUNTINFO = "/proc/self/mountinfo"
CREATE_FLAGS = os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


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

    def write(self, stream) -> tuple[dict[str, str], list[str]]:
        """Every frame of the request into staging; the digests of the files as read back, and
        the files whose read-back digest is not their trailer's, in order.

        A file is finished as soon as its bytes are in: owner, mode and times set on its open
        descriptor, then handed to a pool that fsyncs it, reads it back and hashes it while the
        next files arrive. Directories and symlinks get their facts at the end, children first
        (a directory's mtime moves with every name made in it), and the directories their fsync.
        On a volume that is a whole filesystem of its own (own_filesystem) the tree is made
        durable by one syncfs instead."""
        self.reset()
        digests: dict[str, str] = {}
        differing: list[str] = []
        whole = own_filesystem(self.root)
        with OpenFolders(self.dir) as parents, _Finisher(digests, differing, fsync=not whole) as finisher:
            while (header := read_line(stream)) is not None:
                entry = Entry.from_json(header)
                self._write_one(entry, stream, parents, finisher)
                self.entries.append(entry)
            finisher.wait()
            for entry in reversed(self.entries):
                if entry.kind != "file":
                    self._facts(entry, parents)
        # what /commit renames into place is on the disk
        if whole and syncfs(self.dir):
            return self._answer(digests, differing)
        fsync_all([self.dir] + [os.path.join(self.dir, e.path) for e in self.entries if e.path != "." and (
            e.kind == "directory" or (e.kind == "file" and whole))])
        return self._answer(digests, differing)

    def _answer(self, digests: dict[str, str], differing: list[str]) -> tuple[dict[str, str], list[str]]:
        return {e.path: digests[e.path] for e in self.entries if e.kind == "file"}, sorted(differing)

    def _write_one(self, entry: Entry, stream, parents: "OpenFolders", finisher: "_Finisher") -> None:
        if entry.path == ".":
            return
        parent, name = parents.of(entry.path)
        if entry.kind == "directory":
            os.mkdir(name, 0o700, dir_fd=parent)
        elif entry.kind == "symlink":
            os.symlink(entry.target, name, dir_fd=parent)
        else:
            fd = os.open(name, CREATE_FLAGS, 0o600, dir_fd=parent)
            try:
                expected = self._fill(entry, fd, stream)
                _set_facts(fd, entry)
            except BaseException:
                os.close(fd)
                raise
            finisher.add(entry.path, fd, expected)

    @staticmethod
    def _fill(entry: Entry, fd: int, stream) -> str:
        digest, left, at = hashlib.sha256(), entry.size, 0
        while left:
            data = stream.read(min(CHUNK, left))
            if not data:
                raise WireError(f"{entry.path}: the stream ended inside the file")
            digest.update(data)
            at = _put(fd, data, at, entry.sparse)
            left -= len(data)
        if entry.sparse:
            os.ftruncate(fd, entry.size)  # a hole at the end still counts in the size
        trailer = read_line(stream) or {}
        if trailer.get("sha256") != digest.hexdigest():
            raise WireError(f"{entry.path}: the bytes received are not the catalog's")
        return trailer["sha256"]

    def _facts(self, entry: Entry, parents: "OpenFolders") -> None:
        if entry.path == ".":
            return  # the root's facts are set on the volume's root at commit
        parent, name = parents.of(entry.path)
        if os.geteuid() == 0:
            os.chown(name, entry.uid, entry.gid, dir_fd=parent, follow_symlinks=False)
        if entry.kind != "symlink":
            os.chmod(name, entry.mode, dir_fd=parent)
        os.utime(name, ns=(entry.mtime_ns, entry.mtime_ns), dir_fd=parent, follow_symlinks=False)

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


def own_filesystem(root: str, mountinfo: str | None = None) -> bool:
    """Whether `root` is where a whole filesystem is mounted (a block volume: RBD, EBS, PD,
    Longhorn, TopoLVM), not a directory of a larger one bound there (hostPath, local-path, NFS
    subdirectories) or no mount point at all. Then one syncfs makes the restored tree durable
    and waits for nothing else; on a shared filesystem it would wait for every other writer's
    dirty data (in the benchmark: the whole bench's, 36-52 s against 18-47 s of fsyncs), so
    each file is fsynced there. From /proc/self/mountinfo: the mount's root field is `/`."""
    try:
        if mountinfo is None:
            with open(MOUNTINFO, encoding="utf-8", errors="replace") as handle:
                mountinfo = handle.read()
    except OSError:
        return False
    point, whole = os.path.realpath(root), False
    for line in mountinfo.splitlines():
        fields = line.split(" ")
        if len(fields) > 4 and _unescaped(fields[4]) == point:
            whole = _unescaped(fields[3]) == "/"  # the last mount at a point is the one seen
    return whole


def _unescaped(field: str) -> str:
    """mountinfo writes space, tab, newline and backslash as octal escapes (\040 ...)."""
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field)


def _set_facts(fd: int, entry: Entry) -> None:
    """A written file's owner, mode and times, set on its descriptor (no path walked again)."""
    if os.geteuid() == 0:
        os.fchown(fd, entry.uid, entry.gid)
    os.fchmod(fd, entry.mode)
    os.utime(fd, ns=(entry.mtime_ns, entry.mtime_ns))


def _put(fd: int, data: bytes, at: int, sparse: bool) -> int:
    """Write data at offset `at`; in a sparse file, aligned all-zero blocks become holes (not
    written). The offset after it."""
    if not sparse:
        view = memoryview(data)
        while view:
            written = os.pwrite(fd, view, at)
            view, at = view[written:], at + written
        return at
    for start in range(0, len(data), BLOCK):
        block = data[start:start + BLOCK]
        if not (len(block) == BLOCK and block == ZEROS):
            _put(fd, block, at, False)
        at += len(block)
    return at


class _Finisher:
    """Written files' descriptors, each fsynced, read back and hashed on a pool while the next
    files arrive; at most FINISHING of them open at once."""

    def __init__(self, digests: dict[str, str], differing: list[str], fsync: bool):
        self.digests, self.differing, self.window = digests, differing, collections.deque()
        self.fsync = fsync  # False: the volume's filesystem is synced whole at the end
        self.pool = ThreadPoolExecutor(FSYNC_THREADS, thread_name_prefix="finish")

    def __enter__(self) -> "_Finisher":
        return self

    def __exit__(self, *_) -> None:
        self.pool.shutdown(wait=True)  # every descriptor closed, also after a failure
        self.window.clear()

    def add(self, path: str, fd: int, expected: str) -> None:
        if len(self.window) >= FINISHING:
            self.window.popleft().result()
        self.window.append(self.pool.submit(self._finish, path, fd, expected, self.fsync))

    def wait(self) -> None:
        while self.window:
            self.window.popleft().result()

    def _finish(self, path: str, fd: int, expected: str, fsync: bool) -> None:
        try:
            if fsync:
                os.fsync(fd)
            digest, at = hashlib.sha256(), 0
            while data := os.pread(fd, CHUNK, at):
                digest.update(data)
                at += len(data)
            self.digests[path] = digest.hexdigest()
            if self.digests[path] != expected:
                self.differing.append(path)
        finally:
            os.close(fd)


def file_digest(root: str, path: str) -> str:
    digest = hashlib.sha256()
    with os.fdopen(open_under(root, path, READ_FLAGS), "rb") as handle:
        while data := handle.read(CHUNK):
            digest.update(data)
    return digest.hexdigest()
