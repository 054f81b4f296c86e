"""Checking a raft snapshot while it streams: gzip, tar, and the snapshot's own SHA256SUMS.

A Vault/OpenBao raft snapshot (GET sys/storage/raft/snapshot) is a gzip-compressed tar of
`meta.json` (raft index and term), `state.bin` (the storage, barrier-encrypted), `SHA256SUMS`
(the sha256 of each of those) and `SHA256SUMS.sealed` (the same sums sealed with the barrier,
which only the cluster can open). The backup hands the sink a `CheckedStream`: every byte the
sink reads also goes through the check, and the end of the stream is reported only when the
gzip trailer (its CRC), the end of the tar and every member's digest agree. Anything else, a
stream cut off mid-way included, raises `SnapshotDamaged` from `read`: the sink's write fails,
so the source fails and no artifact is recorded. Nothing is spooled to disk.

The restore runs the same check over the verified repository content before it sends a byte.
"""

from __future__ import annotations

import hashlib
import json
import zlib
from typing import BinaryIO

BLOCK = 512
SUMS = "SHA256SUMS"
SEALED_SUMS = "SHA256SUMS.sealed"  # sealed with the barrier: only the cluster can check it
REQUIRED = ("meta.json", "state.bin", SUMS)
_SMALL = 1 << 20  # meta.json and SHA256SUMS are kept to read; they are a few hundred bytes


class SnapshotDamaged(Exception):
    """The snapshot stream is not a complete, self-consistent raft snapshot."""


class _TarWalk:
    """A tar reader fed by pieces: hashes each member as its bytes pass, keeps none but small ones."""

    def __init__(self) -> None:
        self._buf = bytearray()
        self._left = 0  # content bytes of the current member still to come
        self._pad = 0  # padding to the next block
        self._member: str | None = None
        self._hash = hashlib.sha256()
        self._small = bytearray()
        self._special = ""  # a pax or GNU long-name header whose content names the next member
        self._next_name: str | None = None
        self.ended = False
        self.digests: dict[str, str] = {}
        self.small: dict[str, bytes] = {}

    def feed(self, data: bytes) -> None:
        self._buf += data
        while self._buf:
            if self._left:
                self._content()
            elif self._pad:
                n = min(self._pad, len(self._buf))
                del self._buf[:n]
                self._pad -= n
            elif self.ended:
                if any(self._buf):
                    raise SnapshotDamaged("data after the end of the tar archive")
                self._buf.clear()
            elif len(self._buf) >= BLOCK:
                header = bytes(self._buf[:BLOCK])
                del self._buf[:BLOCK]
                self._header(header)
            else:
                return

    def _content(self) -> None:
        n = min(self._left, len(self._buf))
        piece = bytes(self._buf[:n])
        del self._buf[:n]
        self._left -= n
        self._hash.update(piece)
        if len(self._small) < _SMALL:
            self._small += piece
        if not self._left:
            self._member_done()

    def _header(self, header: bytes) -> None:
        if not any(header):
            self.ended = True
            return
        _check_header_sum(header)
        size = _size(header[124:136])
        kind = chr(header[156]) if header[156] else "0"
        name = self._next_name or _name(header)
        self._next_name = None
        self._member, self._special = name, kind if kind in "xLg" else ""
        self._hash, self._small = hashlib.sha256(), bytearray()
        self._left, self._pad = size, (-size) % BLOCK
        if size == 0:
            self._member_done()

    def _member_done(self) -> None:
        data = bytes(self._small)
        if self._special == "L":
            self._next_name = data.rstrip(b"\0").decode("utf-8", "replace")
        elif self._special == "x":
            self._next_name = _pax_path(data) or self._next_name
        elif self._special == "" and self._member is not None:
            if self._member in self.digests:
                raise SnapshotDamaged(f"member {self._member} appears twice")
            self.digests[self._member] = self._hash.hexdigest()
            if len(data) < _SMALL:
                self.small[self._member] = data
        self._member = None


def _check_header_sum(header: bytes) -> None:
    stored = header[148:156].strip(b"\0 ")
    computed = sum(header[:148]) + sum(header[156:]) + 8 * 32
    try:
        ok = int(stored, 8) == computed
    except ValueError:
        ok = False
    if not ok:
        raise SnapshotDamaged("a tar header's checksum does not match (damaged archive)")


def _size(field: bytes) -> int:
    if field[0] & 0x80:  # base-256, for members of 8 GiB and more
        return int.from_bytes(bytes([field[0] & 0x7F]) + field[1:], "big")
    text = field.strip(b"\0 ")
    try:
        return int(text, 8) if text else 0
    except ValueError:
        raise SnapshotDamaged("a tar header's size is not a number (damaged archive)") from None


def _name(header: bytes) -> str:
    name = header[0:100].split(b"\0", 1)[0]
    if header[257:262] == b"ustar":
        prefix = header[345:500].split(b"\0", 1)[0]
        if prefix:
            name = prefix + b"/" + name
    return name.decode("utf-8", "replace")


def _pax_path(data: bytes) -> str | None:
    for record in data.split(b"\n"):
        _, _, field = record.partition(b" ")
        key, _, value = field.partition(b"=")
        if key == b"path":
            return value.decode("utf-8", "replace")
    return None


class SnapshotCheck:
    """Feed it the snapshot's bytes in order; `finish()` says whether they form a whole, good snapshot."""

    def __init__(self) -> None:
        self._gzip = zlib.decompressobj(16 + zlib.MAX_WBITS)
        self._tar = _TarWalk()
        self.compressed = 0

    def feed(self, data: bytes) -> None:
        self.compressed += len(data)
        if self._gzip.eof:
            raise SnapshotDamaged("data after the end of the gzip stream")
        try:
            self._tar.feed(self._gzip.decompress(data))
        except zlib.error as exc:
            raise SnapshotDamaged(f"not a valid gzip stream ({exc})") from None
        if self._gzip.eof and self._gzip.unused_data:
            raise SnapshotDamaged("data after the end of the gzip stream")

    def finish(self) -> dict:
        """The snapshot's facts (members, raft index and term) once everything checks; else raise."""
        if not self._gzip.eof:
            raise SnapshotDamaged(f"the snapshot ends early, after {self.compressed} bytes "
                                  "(cut off: no gzip trailer)")
        if not self._tar.ended:
            raise SnapshotDamaged("the tar archive ends early (no end-of-archive block)")
        digests = self._tar.digests
        missing = [name for name in REQUIRED if name not in digests]
        if missing:
            raise SnapshotDamaged(f"not a raft snapshot: {', '.join(missing)} missing")
        listed = _parse_sums(self._tar.small.get(SUMS, b""))
        for name in sorted(set(digests) - {SUMS, SEALED_SUMS}):
            if name not in listed:
                raise SnapshotDamaged(f"{name} is not listed in {SUMS}")
        for name, digest in sorted(listed.items()):
            if digests.get(name) != digest:
                problem = "missing" if name not in digests else "its sha256 differs from " + SUMS
                raise SnapshotDamaged(f"member {name}: {problem}")
        return {"members": sorted(digests), **_raft_position(self._tar.small.get("meta.json", b""))}


def _parse_sums(data: bytes) -> dict[str, str]:
    listed = {}
    for line in data.decode("utf-8", "replace").splitlines():
        digest, _, name = line.strip().partition("  ")
        if not name or len(digest) != 64:
            raise SnapshotDamaged(f"{SUMS} has a malformed line")
        listed[name] = digest.lower()
    if not listed:
        raise SnapshotDamaged(f"{SUMS} lists nothing")
    return listed


def _raft_position(meta: bytes) -> dict:
    try:
        data = json.loads(meta)
        return {"raft_index": int(data.get("Index", 0)), "raft_term": int(data.get("Term", 0))}
    except (ValueError, TypeError, AttributeError):
        raise SnapshotDamaged("meta.json is not the raft snapshot's JSON") from None


class CheckedStream:
    """A binary stream over `raw` that checks every byte read; EOF only when the snapshot is whole.

    `errors` are the exceptions a cut-off connection raises from `raw.read`; they become
    SnapshotDamaged naming how far the stream got.
    """

    def __init__(self, raw: BinaryIO, errors: tuple[type[BaseException], ...] = (), on_close=None):
        self._raw = raw
        self._errors = errors
        self._on_close = on_close
        self.check = SnapshotCheck()
        self.facts: dict | None = None

    def read(self, size: int = -1) -> bytes:
        if size is None or size < 0:
            return b"".join(iter(lambda: self.read(1 << 20), b""))
        try:
            data = self._raw.read(size)
        except self._errors as exc:
            raise SnapshotDamaged(f"the snapshot stream broke after {self.check.compressed} bytes: "
                                  f"{type(exc).__name__}") from None
        if data:
            self.check.feed(data)
            return data
        if self.facts is None:
            self.facts = self.check.finish()
        return b""

    def readable(self) -> bool:
        return True

    def close(self) -> None:
        try:
            self._raw.close()
        finally:
            if self._on_close is not None:
                self._on_close()

    def __enter__(self) -> "CheckedStream":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def check_file(stream: BinaryIO) -> dict:
    """Check a whole snapshot read from `stream` (the restore's spooled copy); its facts, or raise."""
    checked = CheckedStream(stream)
    while checked.read(1 << 20):
        pass
    return checked.facts or {}
