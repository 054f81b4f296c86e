"""The etcd snapshot file: a bbolt database followed by the sha256 of its bytes.

Where it sits: the exporter streams a snapshot from the maintenance API through `Verifying`
into the sink, and restore() checks the file it wrote with `check_file` before renaming it into
place. Both apply the rule `etcdutl snapshot restore` (etcdctl in 3.4) applies before it
trusts a file: a database is a whole number of 512-byte sectors, so a size of `n * 512 + 32`
means the last 32 bytes are the sha256 of everything before them, and that hash must match.
A file without the trailer is refused here: restore would only accept it with
`--skip-hash-check`, and nothing would then tell a torn download from a good one.
"""

from __future__ import annotations

import hashlib
import io
from typing import BinaryIO, Callable, Iterator

HASH_SIZE = 32
SECTOR = 512


class SnapshotCorrupt(Exception):
    """The snapshot's integrity hash is missing or does not match its content."""


def problem(size: int, computed: bytes, trailer: bytes) -> str:
    """Why a snapshot of `size` bytes is not intact ('' when it is)."""
    if size < SECTOR + HASH_SIZE or size % SECTOR != HASH_SIZE:
        return (f"{size} bytes is not a database plus its 32-byte sha256 (etcd's snapshot format): "
                "the snapshot is truncated or has no integrity hash")
    if computed != trailer:
        return (f"integrity hash mismatch: the sha256 of the database is {computed.hex()[:16]}..., "
                f"the snapshot says {trailer.hex()[:16]}...; the snapshot is corrupted")
    return ""


class Verifying(io.RawIOBase):
    """A read-only stream over snapshot pieces that raises SnapshotCorrupt at its end unless the
    trailing sha256 matches. The sink reads to the end before it commits anything, so a
    corrupted snapshot never lands in a snapshot of the repository."""

    def __init__(self, pieces: Iterator[bytes], close: Callable[[], None] = lambda: None) -> None:
        self._pieces = pieces
        self._close = close
        self._hash = hashlib.sha256()
        self._tail = b""  # the last 32 bytes seen: the trailer, once the stream ends
        self._held: list = []  # pieces read but not yet handed out
        self._held_size = 0
        self._size = 0
        self._done = False

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        """Up to `size` bytes, joined from as many pieces as it takes: the repository reads 8 MiB
        chunks and etcd sends 32 KiB pieces, so one join here replaces hundreds of small reads."""
        while (size < 0 or self._held_size < size) and not self._done:
            self._next()
        data = b"".join(self._held)
        if 0 <= size < len(data):
            self._held, self._held_size = [data[size:]], len(data) - size
            return data[:size]
        self._held, self._held_size = [], 0
        return data

    def readinto(self, out) -> int:
        data = self.read(len(out))
        out[:len(data)] = data
        return len(data)

    def _next(self) -> None:
        piece = next(self._pieces, None)
        if piece is None:
            self._done = True
            reason = problem(self._size, self._hash.digest(), self._tail)
            if reason:
                raise SnapshotCorrupt(reason)
            return
        self._size += len(piece)
        if len(piece) >= HASH_SIZE:  # the usual case: hash without joining the piece to the tail
            self._hash.update(self._tail)
            self._hash.update(piece[:-HASH_SIZE])
            self._tail = bytes(piece[-HASH_SIZE:])
        else:
            held = self._tail + bytes(piece)
            self._hash.update(held[:-HASH_SIZE])
            self._tail = held[-HASH_SIZE:]
        self._held.append(piece)
        self._held_size += len(piece)

    def close(self) -> None:
        if not self.closed:
            self._close()
        super().close()


def check_stream(stream: BinaryIO, out: BinaryIO | None = None, piece: int = 8 << 20) -> int:
    """Read a whole snapshot (copying it to `out`), raise SnapshotCorrupt unless it is intact;
    return its size."""
    verifying = Verifying(iter(lambda: stream.read(piece), b""))
    size = 0
    while chunk := verifying.read(piece):
        size += len(chunk)
        if out is not None:
            out.write(chunk)
    return size


def check_file(path: str) -> int:
    """The size of the intact snapshot at `path`; SnapshotCorrupt when it is not intact."""
    with open(path, "rb") as handle:
        return check_stream(handle)
