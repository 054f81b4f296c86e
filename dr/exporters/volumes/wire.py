"""What the mover and dr say to each other over HTTP: entries as JSON lines, files as frames.

Both ends are dr (the mover runs dr's own image), so this is one module both import. Standard
library only: the mover needs nothing else.

  GET  /entries   the volume's tree, parents first, one JSON object per line (Entry.to_json);
                  the last line is {"end": true, "unreadable": N}
  POST /read      body: JSON lines {"path": P}; answer: one frame per path, in that order
  POST /digests  body: JSON lines {"path": P}; answer: JSON lines {"path", "sha256"} (or "error")
  PUT  /write     body: frames (header with the entry's facts, then its bytes), written into
                  the staging directory; answer: JSON {"written": N, "digests": {path: sha256}},
                  or with ANSWER_HEADER "differing" {"written": N, "files": F, "differing":
                  [paths read back otherwise than their trailers said, the first 100],
                  "differing_total": D}
  POST /commit    renames what /write staged into place; answer: JSON {"placed": N}
  POST /abort     removes the staging directory
  POST /exit      the mover exits 0 (its Job completes)

A frame is a header line (JSON: {"path", "size"} or {"path", "error"}), then `size` bytes, then a
trailer line ({"ok": true, "sha256": ...} or {"error": ...}: the file changed or failed while
it was read; its bytes are then not the file's). Every request carries the run's token in
TOKEN_HEADER: the mover serves the volume to no one else.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import BinaryIO

TOKEN_HEADER = "X-Dr-Mover-Token"
# on PUT /write, "differing": the mover compares each file's read-back digest with its trailer's
# and answers the paths that differ, not every digest (an answer of 100,000 paths, parsed by dr)
ANSWER_HEADER = "X-Dr-Answer"
TOKEN_ENV = "DR_MOVER_TOKEN"
PORT = 8080
MAX_LINE = 1 << 20  # a header, trailer or entry line: paths and facts, never megabytes
STAGING = ".dr-restore-staging"  # on the volume, so the rename into place is atomic
REPLACED = STAGING + ".old"  # what a commit moves aside, removed once the staged names are in place
MOVERS_OWN = (STAGING, REPLACED)  # never listed, compared or backed up: a killed mover may leave them
KINDS = ("file", "directory", "symlink")


class WireError(Exception):
    """The other end broke the protocol (a line too long, a frame cut short, bad JSON)."""


class FrameFailed(Exception):
    """One file could not be read whole at the mover: its frame carried an error."""


@dataclass(slots=True)  # a restore of 100,000 files holds as many: a __dict__ each doubled them
class Entry:
    """One file, directory or symlink of the volume; path '.' is the volume's root."""

    path: str
    kind: str
    mode: int
    uid: int
    gid: int
    mtime_ns: int
    size: int = 0
    target: str = ""  # a symlink's
    sparse: bool = False  # fewer blocks allocated than its size needs: restored with holes

    def to_json(self) -> dict:
        out = {"path": self.path, "kind": self.kind, "mode": self.mode, "uid": self.uid, "gid": self.gid,
               "mtime_ns": self.mtime_ns}
        if self.kind == "file":
            out["size"] = self.size
            if self.sparse:
                out["sparse"] = True
        if self.kind == "symlink":
            out["target"] = self.target
        return out

    @classmethod
    def from_json(cls, data: dict) -> "Entry":
        try:
            entry = cls(str(data["path"]), str(data["kind"]), int(data["mode"]), int(data["uid"]),
                        int(data["gid"]), int(data["mtime_ns"]), int(data.get("size", 0)),
                        str(data.get("target", "")), bool(data.get("sparse", False)))
        except (KeyError, TypeError, ValueError) as exc:
            raise WireError(f"bad entry {str(data)[:200]}: {exc}") from None
        if entry.kind not in KINDS or entry.size < 0:
            raise WireError(f"bad entry {entry.path!r}: kind {entry.kind!r}, size {entry.size}")
        return entry

    @property
    def change_token(self) -> str:
        """What changes when the file does. No inode: a copy provisioned from a snapshot gets new
        inodes every time, and its unchanged files must still be recognized."""
        return f"{self.kind}:{self.size}:{self.mtime_ns}:{self.mode:o}:{self.uid}:{self.gid}:{self.target}"


def line(data: dict) -> bytes:
    return json.dumps(data, separators=(",", ":"), sort_keys=True).encode() + b"\n"


def read_line(stream: BinaryIO) -> dict | None:
    """The next JSON line; None at the end of the stream."""
    raw = stream.readline(MAX_LINE + 1)
    if not raw:
        return None
    if len(raw) > MAX_LINE or not raw.endswith(b"\n"):
        raise WireError("a line longer than 1 MiB, or cut short")
    try:
        data = json.loads(raw)
    except ValueError:
        raise WireError(f"not JSON: {raw[:80]!r}") from None
    if not isinstance(data, dict):
        raise WireError(f"not an object: {raw[:80]!r}")
    return data


class FrameReader:
    """The bytes of one frame, as a stream; at its end the trailer is read, and an error in it
    raises FrameFailed (so what the sink stored of it is never recorded as the file)."""

    def __init__(self, stream: BinaryIO, path: str, size: int):
        self._stream, self.path, self.remaining = stream, path, size
        self.digest = hashlib.sha256()
        self.done = False

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        if self.remaining == 0:
            self._finish()
            return b""
        want = self.remaining if size is None or size < 0 else min(size, self.remaining)
        data = self._stream.read(want)
        if not data:
            raise WireError(f"{self.path}: the mover's stream ended inside the file")
        self.remaining -= len(data)
        self.digest.update(data)
        return data

    def drain(self) -> None:
        """Skip what is left of the frame (the sink stopped reading it)."""
        try:
            while self.read(1 << 20):
                pass
        except FrameFailed:
            pass

    def _finish(self) -> None:
        if self.done:
            return
        self.done = True
        trailer = read_line(self._stream)
        if trailer is None:
            raise WireError(f"{self.path}: no trailer")
        if "error" in trailer:
            raise FrameFailed(f"{self.path}: {trailer['error']}")
        if trailer.get("sha256") != self.digest.hexdigest():
            raise WireError(f"{self.path}: the bytes received are not the bytes sent")

    def close(self) -> None:
        pass

    def __enter__(self) -> "FrameReader":
        return self

    def __exit__(self, *_) -> None:
        pass
