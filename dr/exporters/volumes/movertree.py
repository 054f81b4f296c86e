"""The mover's reading side: paths from dr opened under the volume's root, the tree walked, a
file sent as one frame (mover.py serves them; wire.py is the format).

Paths from dr are opened one component at a time under the root with O_NOFOLLOW, so no path,
however it is spelled, reaches outside the volume. The standard library only, as mover.py.
"""

from __future__ import annotations

import hashlib
import os
import stat
from typing import Iterator

from dr.exporters.volumes.wire import MOVERS_OWN, Entry, WireError, line

CHUNK = 1 << 20
DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
FOLDERS_KEPT = 64  # directories kept open while their files are read or written


def safe_parts(path: str) -> list[str]:
    """The components of a relative path; '..', absolute paths and empty names refused."""
    if path in (".", ""):
        return []
    parts = path.split("/")
    if path.startswith("/") or any(p in ("", ".", "..") for p in parts) or "\0" in path:
        raise WireError(f"refused path {path!r}")
    return parts


def open_under(root: str, path: str, flags: int, mode: int = 0o600) -> int:
    """An fd for `path` under root, every directory on the way opened with O_NOFOLLOW."""
    parts = safe_parts(path)
    fd = os.open(root, DIR_FLAGS)
    try:
        for part in parts[:-1]:
            next_fd = os.open(part, DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = next_fd
        if not parts:
            return os.dup(fd)
        return os.open(parts[-1], flags, mode, dir_fd=fd)
    finally:
        os.close(fd)


class OpenFolders:
    """Open descriptors of the directories under `top`, the FOLDERS_KEPT most recently used:
    paths come parents first, depth first (the listing's order), so a directory's files find it
    open, where open_under walked every component again for each file (each directory is opened
    under `top` one component at a time, without following a symlink)."""

    def __init__(self, top: str):
        self.top, self.open = top, {}

    def __enter__(self) -> "OpenFolders":
        return self

    def __exit__(self, *_) -> None:
        for fd in self.open.values():
            os.close(fd)
        self.open.clear()

    def of(self, path: str) -> tuple[int, str]:
        """(a descriptor of the entry's directory, the entry's name in it)."""
        parts = safe_parts(path)
        if not parts:
            raise WireError("refused path '.': not a name in a directory")
        folder = "/".join(parts[:-1]) or "."
        fd = self.open.pop(folder, None)
        if fd is None:
            fd = open_under(self.top, folder, DIR_FLAGS)
            if len(self.open) >= FOLDERS_KEPT:
                os.close(self.open.pop(next(iter(self.open))))
        self.open[folder] = fd  # the most recently used last
        return fd, parts[-1]


def walk(root: str) -> Iterator[dict]:
    """Entry JSON per item, parents first; {"path", "error"} for what cannot be read."""
    root_dev = os.lstat(root).st_dev
    stack = ["."]
    while stack:
        rel = stack.pop()
        full = root if rel == "." else os.path.join(root, rel)
        try:
            st = os.lstat(full)
        except OSError as exc:
            yield {"path": rel, "error": exc.strerror or str(exc)}
            continue
        entry = _entry(rel, full, st)
        if entry is None:
            yield {"path": rel, "error": "not a file, directory or symlink: skipped"}
            continue
        yield entry.to_json()
        if entry.kind != "directory":
            continue
        if st.st_dev != root_dev:
            yield {"path": rel, "error": "another filesystem mounted here: not entered"}
            continue
        try:
            names = sorted(os.listdir(full), reverse=True)
        except OSError as exc:
            yield {"path": rel, "error": f"cannot list: {exc.strerror or exc}"}
            continue
        stack.extend(n if rel == "." else f"{rel}/{n}" for n in names if not (rel == "." and n in MOVERS_OWN))


def _entry(rel: str, full: str, st: os.stat_result) -> Entry | None:
    kind = "file" if stat.S_ISREG(st.st_mode) else "directory" if stat.S_ISDIR(st.st_mode) else \
        "symlink" if stat.S_ISLNK(st.st_mode) else ""
    if not kind:
        return None
    entry = Entry(rel, kind, stat.S_IMODE(st.st_mode), st.st_uid, st.st_gid, st.st_mtime_ns)
    if kind == "file":
        entry.size = st.st_size
        entry.sparse = st.st_blocks * 512 < st.st_size
    elif kind == "symlink":
        entry.target = os.readlink(full)
    return entry


def send_file(folders: "OpenFolders", path: str, out) -> None:
    """One frame: header, the bytes, trailer (an error trailer when the file changed while read)."""
    try:
        parent, name = folders.of(path)
        fd = os.open(name, READ_FLAGS, dir_fd=parent)
    except (OSError, WireError) as exc:
        out.write(line({"path": path, "error": getattr(exc, "strerror", None) or str(exc)}))
        return
    with os.fdopen(fd, "rb", buffering=0) as handle:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            out.write(line({"path": path, "error": "no longer a regular file"}))
            return
        size, sent, digest, error = st.st_size, 0, hashlib.sha256(), ""
        out.write(line({"path": path, "size": size}))
        while sent < size:
            try:
                data = handle.read(min(CHUNK, size - sent))
            except OSError as exc:
                data, error = b"", exc.strerror or str(exc)
            if not data:  # shrank, or failed: the frame is still `size` long, and marked bad
                error = error or "the file shrank while it was read"
                data = bytes(min(CHUNK, size - sent))
            digest.update(data)
            out.write(data)
            sent += len(data)
        if not error and os.fstat(fd).st_mtime_ns != st.st_mtime_ns:
            error = "the file changed while it was read"
        out.write(line({"error": error} if error else {"ok": True, "sha256": digest.hexdigest()}))
