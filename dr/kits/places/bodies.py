"""Read-only, seekable raw files over bytes held elsewhere: request bodies sent without a copy.

In the kit: S3 writers send a part straight from a pooled buffer (body_of), the checkpoint
formats read an object's byte ranges through a SeekableReader subclass (RangeFile), and
readers of the place contract fill a caller's buffer from a stream (fill).
"""

from __future__ import annotations

import io
from typing import Callable


class SeekableReader(io.RawIOBase):
    """Position bookkeeping for a read-only, seekable raw file of known size; subclasses
    implement readinto from self._pos. Seeks are clamped to [0, size]."""

    def __init__(self, size: int) -> None:
        super().__init__()
        self._size, self._pos = size, 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: self._size}[whence]
        self._pos = min(max(0, base + offset), self._size)
        return self._pos


class ViewBody(SeekableReader):
    """A seekable, read-only file over a memoryview: the body of a request whose bytes are
    only part of a pooled buffer (a file's last part), sent without copying them first."""

    def __init__(self, view: memoryview) -> None:
        super().__init__(len(view))
        self._view = view

    def readinto(self, buffer) -> int:  # type: ignore[no-untyped-def]
        n = min(len(buffer), len(self._view) - self._pos)
        buffer[:n] = self._view[self._pos:self._pos + n]
        self._pos += n
        return n


def body_of(view: memoryview):
    """What a request sends: the whole buffer itself, or a file over the used part of it."""
    whole = view.obj
    return whole if isinstance(whole, (bytes, bytearray)) and len(whole) == len(view) else ViewBody(view)


def fill(view: memoryview, readinto: Callable[[memoryview], int]) -> int:
    """Fill `view` by calls of `readinto` (which may return less than asked); fewer bytes only
    where the stream ends: what the place contract's Reader.readinto promises."""
    got = 0
    while got < len(view):
        n = readinto(view[got:])
        if not n:
            break
        got += n
    return got
