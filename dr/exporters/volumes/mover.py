"""The mover: the process in the volume's pod that reads or writes the mounted files for dr.

Run by the mover Job as `python -m dr.exporters.volumes.mover --root /data --port 8080
[--write]`; dr reaches it through the API server's pod proxy and speaks wire.py to it. The
standard library only, and no access to the API (the Job mounts no service account token).

Reading: the tree under --root, never following a symlink, never leaving its filesystem (a
mount below it), the staging directory left out; a file or directory it cannot read is named
and counted in /entries, and the rest is still served. Writing (--write): everything goes
into STAGING on the volume, each file's bytes checked against the digest dr sent, owners,
modes and times set, then read back from the disk and hashed; /commit renames it into place,
so a workload never sees a half-written tree, and a full volume (ENOSPC) fails the write with
nothing but the staging directory, which is removed, left behind.

Paths from dr are opened one component at a time under --root with O_NOFOLLOW, so no path,
however it is spelled, reaches outside the volume.
"""

from __future__ import annotations

import argparse
import errno
import hashlib
import json
import os
import shutil
import stat
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Iterator

from dr.exporters.volumes.wire import (MOVERS_OWN, REPLACED, STAGING, TOKEN_ENV, TOKEN_HEADER, Entry, WireError, line,
                                       read_line)
from dr.kits.syncing import sync_filesystem as sync_filesystem_of

CHUNK = 1 << 20
DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
BLOCK = 4096  # a run of zeros this long, aligned, is written as a hole in a sparse file
ZEROS = bytes(BLOCK)


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


def send_file(root: str, path: str, out) -> None:
    """One frame: header, the bytes, trailer (an error trailer when the file changed while read)."""
    try:
        fd = open_under(root, path, READ_FLAGS)
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
        sync_filesystem(self.dir)  # once for all: what /commit renames into place is on the disk
        return {e.path: _digest(self.dir, e.path) for e in self.entries if e.kind == "file"}

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


def _digest(root: str, path: str) -> str:
    digest = hashlib.sha256()
    with os.fdopen(open_under(root, path, READ_FLAGS), "rb") as handle:
        while data := handle.read(CHUNK):
            digest.update(data)
    return digest.hexdigest()


class Mover(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, port: int, root: str, token: str, writable: bool, idle_seconds: float):
        super().__init__(("0.0.0.0", port), Handler)
        self.root, self.token, self.writable = os.path.abspath(root), token, writable
        self.staging = Staging(self.root) if writable else None
        self.idle_seconds, self.last = idle_seconds, time.monotonic()
        self.lock = threading.Lock()  # one write or read at a time: dr sends one


class Handler(BaseHTTPRequestHandler):
    server: Mover
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args) -> None:  # noqa: A002 (the base class's name)
        sys.stderr.write("mover: " + (format % args) + "\n")

    def _allowed(self) -> bool:
        self.server.last = time.monotonic()
        if self.headers.get(TOKEN_HEADER) != self.server.token:
            self._json(403, {"error": "wrong or missing token"})
            return False
        return True

    def _json(self, code: int, data: dict) -> None:
        body = json.dumps(data).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _streaming(self) -> "_Chunked":
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        return _Chunked(self.wfile)

    def _body(self):
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            return _Dechunked(self.rfile)
        return _Limited(self.rfile, int(self.headers.get("Content-Length") or 0))

    def do_GET(self) -> None:  # noqa: N802 (http.server's names)
        if not self._allowed():
            return
        if self.path != "/entries":
            return self._json(404, {"error": f"no {self.path}"})
        out, unreadable = self._streaming(), 0
        for item in walk(self.server.root):
            unreadable += "error" in item
            out.write(line(item))
        out.write(line({"end": True, "unreadable": unreadable}))
        out.close()

    def do_POST(self) -> None:  # noqa: N802
        if not self._allowed():
            return
        body = self._body()
        if self.path == "/read":
            paths = [str(item.get("path", "")) for item in iter(lambda: read_line(body), None)]
            out = self._streaming()
            for path in paths:
                send_file(self.server.root, path, out)
            out.close()
        elif self.path == "/digests":
            paths = [str(item.get("path", "")) for item in iter(lambda: read_line(body), None)]
            out = self._streaming()
            for path in paths:
                try:
                    out.write(line({"path": path, "sha256": _digest(self.server.root, path)}))
                except (OSError, WireError) as exc:
                    out.write(line({"path": path, "error": getattr(exc, "strerror", None) or str(exc)}))
            out.close()
        elif self.path == "/exit":
            self._json(200, {"exiting": True})
            threading.Thread(target=self.server.shutdown, daemon=True).start()
        elif self.path in ("/commit", "/abort") and self.server.staging is not None:
            self._settle(self.path == "/commit")
        else:
            self._json(404, {"error": f"no {self.path}"})

    def _settle(self, commit: bool) -> None:
        staging = self.server.staging
        try:
            if commit:
                return self._json(200, {"placed": staging.commit()})
            shutil.rmtree(staging.dir, ignore_errors=True)
            self._json(200, {"aborted": True})
        except OSError as exc:
            self._json(500, {"error": f"{exc.strerror or exc}"})

    def do_PUT(self) -> None:  # noqa: N802
        if not self._allowed():
            return
        if self.path != "/write" or self.server.staging is None:
            return self._json(404, {"error": f"no {self.path} (is the mover started with --write?)"})
        staging = self.server.staging
        try:
            digests = staging.write(self._body())
        except (OSError, WireError) as exc:
            shutil.rmtree(staging.dir, ignore_errors=True)  # nothing half-written stays
            full = isinstance(exc, OSError) and exc.errno == errno.ENOSPC
            self.close_connection = True
            return self._json(507 if full else 400, {"error": getattr(exc, "strerror", None) or str(exc),
                                                     "full": full})
        self._json(200, {"written": len(staging.entries), "digests": digests})


class _Chunked:
    def __init__(self, wfile):
        self.wfile = wfile

    def write(self, data: bytes) -> None:
        if data:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))

    def close(self) -> None:
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


class _Limited:
    def __init__(self, rfile, length: int):
        self.rfile, self.left = rfile, length

    def read(self, size: int = -1) -> bytes:
        size = self.left if size < 0 else min(size, self.left)
        data = self.rfile.read(size) if size else b""
        self.left -= len(data)
        return data

    def readline(self, limit: int = -1) -> bytes:
        data = self.rfile.readline(min(limit, self.left) if limit >= 0 else self.left) if self.left else b""
        self.left -= len(data)
        return data


class _Dechunked:
    """A chunked request body as a stream (http.server does not undo the chunking)."""

    def __init__(self, rfile):
        # a bytearray: appending a chunk and taking from the front cost what they move, where
        # bytes would copy the whole buffer each time (16 times a MiB for every MiB read)
        self.rfile, self.buffer, self.ended = rfile, bytearray(), False

    def _fill(self, want: int) -> None:
        while not self.ended and len(self.buffer) < want:
            size = int(self.rfile.readline(64).split(b";")[0].strip() or b"0", 16)
            if size == 0:
                self.rfile.readline(64)
                self.ended = True
                break
            self.buffer += self.rfile.read(size)
            self.rfile.readline(64)

    def read(self, size: int = -1) -> bytes:
        self._fill(size if size >= 0 else 1 << 62)
        size = len(self.buffer) if size < 0 else size
        data = bytes(self.buffer[:size])
        del self.buffer[:size]
        return data

    def readline(self, limit: int = -1) -> bytes:
        while b"\n" not in self.buffer and not self.ended and (limit < 0 or len(self.buffer) < limit):
            self._fill(len(self.buffer) + 1)
        end = self.buffer.find(b"\n")
        end = len(self.buffer) if end < 0 else end + 1
        if limit >= 0:
            end = min(end, limit)
        data = bytes(self.buffer[:end])
        del self.buffer[:end]
        return data


def sync_filesystem(directory: str) -> None:
    """One flush for every file staged (syncfs), where an fsync per file costs a journal commit
    each; where syncfs is not there, each file is fsynced."""
    sync_filesystem_of(directory, (os.path.join(root, name) for root, _, files in os.walk(directory)
                                   for name in files))


def _watch_idle(server: Mover) -> None:
    while True:
        time.sleep(1)
        if time.monotonic() - server.last > server.idle_seconds:
            sys.stderr.write(f"mover: no request for {server.idle_seconds:.0f} s: exiting\n")
            server.shutdown()
            return


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m dr.exporters.volumes.mover")
    parser.add_argument("--root", required=True, help="the mounted volume")
    parser.add_argument("--port", type=int, default=8080)
    parser.add_argument("--write", action="store_true", help="accept /write and /commit (restore)")
    parser.add_argument("--idle-seconds", type=float, default=600.0,
                        help="exit after this long without a request (dr is gone)")
    args = parser.parse_args(argv)
    token = os.environ.get(TOKEN_ENV, "")
    if not token:
        sys.stderr.write(f"mover: {TOKEN_ENV} is not set: refusing to serve the volume to anyone\n")
        return 2
    if not os.path.isdir(args.root):
        sys.stderr.write(f"mover: {args.root} is not a directory (is the volume mounted?)\n")
        return 2
    server = Mover(args.port, args.root, token, args.write, args.idle_seconds)
    threading.Thread(target=_watch_idle, args=(server,), daemon=True).start()
    sys.stderr.write(f"mover: serving {args.root} on port {args.port}{' (write)' if args.write else ''}\n")
    server.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())
