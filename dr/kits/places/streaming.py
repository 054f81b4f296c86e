"""Whole files between a place and a sequential stream, for copiers simpler than the checkpoints'.

In the kit, over the place contract (contract.py). The MLflow weight copies read a version's
files as streams and write them to the copy's place: write_stream cuts a stream of known size
into the writer's parts one at a time (memory: one part; the part sizes are parts.py's), each
with the CRC32 that S3 checks it against, and publishes the file at once (complete) only when
the stream held exactly the listed size; otherwise what was written is removed (abort) and the
count read is returned, so the caller can say why. ReaderStream gives a place's Reader the file
interface (read, readinto, close) that hashing code expects.
"""

from __future__ import annotations

import io
from typing import BinaryIO

from dr.kits.places.contract import Place, Reader
from dr.kits.places.parts import part_size_for
from dr.kits.places.s3 import crc32_b64

BUDGET = 64 << 20  # files up to half of it go as one PUT; larger ones in parts (parts.py)


def write_stream(place: Place, path: str, stream: BinaryIO, size: int, budget: int = BUDGET) -> int:
    """Write `size` bytes read from `stream` to `path`; the bytes read (published only if == size)."""
    part_size = part_size_for(size, budget)
    writer = place.writer(path, size, part_size)
    done = 0
    try:
        for number in range(1, -(-size // part_size) + 1):
            want = min(part_size, size - done)
            data = _read_up_to(stream, want)
            done += len(data)
            if len(data) < want:
                break  # the stream ended early: the file changed since it was listed
            writer.write(number, memoryview(data), crc32_b64(data))
        done += len(stream.read(1))  # a byte more: the file grew since it was listed
    except BaseException:
        writer.abort()
        raise
    if done != size:
        writer.abort()
        return done
    writer.complete()
    return done


def _read_up_to(stream: BinaryIO, n: int) -> bytes:
    """`n` bytes, fewer only where the stream ends (a read may return less than asked)."""
    pieces, got = [], 0
    while got < n:
        piece = stream.read(n - got)
        if not piece:
            break
        pieces.append(piece)
        got += len(piece)
    return b"".join(pieces)


class ReaderStream(io.RawIOBase):
    """A place's Reader as a read-only raw file."""

    def __init__(self, reader: Reader) -> None:
        super().__init__()
        self._reader = reader

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:  # type: ignore[no-untyped-def]
        return self._reader.readinto(memoryview(buffer).cast("B"))

    def close(self) -> None:
        if not self.closed:
            self._reader.close()
        super().close()
