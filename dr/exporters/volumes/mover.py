"""The mover: the process in the volume's pod that reads or writes the mounted files for dr.

Run by the mover Job as `python -m dr.exporters.volumes.mover --root /data --port 8080
[--write]`; dr reaches it through the API server's pod proxy and speaks wire.py to it. The
standard library only, and no access to the API (the Job mounts no service account token).
This module is the HTTP side; movertree.py reads the tree, staging.py writes it.

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
import json
import os
import shutil
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from dr.exporters.volumes.movertree import OpenFolders, send_file, walk
from dr.exporters.volumes.staging import Staging, file_digest
from dr.exporters.volumes.wire import ANSWER_HEADER, TOKEN_ENV, TOKEN_HEADER, WireError, line, read_line
from dr.kits.buffers import keep_freed_buffers


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
            with OpenFolders(self.server.root) as folders:
                for path in paths:
                    send_file(folders, path, out)
            out.close()
        elif self.path == "/digests":
            paths = [str(item.get("path", "")) for item in iter(lambda: read_line(body), None)]
            out = self._streaming()
            for path in paths:
                try:
                    out.write(line({"path": path, "sha256": file_digest(self.server.root, path)}))
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
            digests, differing = staging.write(self._body())
        except (OSError, WireError) as exc:
            shutil.rmtree(staging.dir, ignore_errors=True)  # nothing half-written stays
            full = isinstance(exc, OSError) and exc.errno == errno.ENOSPC
            self.close_connection = True
            return self._json(507 if full else 400, {"error": getattr(exc, "strerror", None) or str(exc),
                                                     "full": full})
        if self.headers.get(ANSWER_HEADER) == "differing":
            return self._json(200, {"written": len(staging.entries), "files": len(digests),
                                    "differing": differing[:100], "differing_total": len(differing)})
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
    keep_freed_buffers()  # every frame's buffers are freed and allocated again (dr/kits/buffers.py)
    server = Mover(args.port, args.root, token, args.write, args.idle_seconds)
    threading.Thread(target=_watch_idle, args=(server,), daemon=True).start()
    sys.stderr.write(f"mover: serving {args.root} on port {args.port}{' (write)' if args.write else ''}\n")
    server.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())
