"""Part buffers for the copier: allocated once, reused, and the only place file bytes live.

Why: copying a 1 TB checkpoint must not need more memory than copying 1 GB. A fresh `bytes`
per part read lets the allocator keep freed parts around (glibc's mmap threshold grows after
the first large free, and freed heap blocks fragment across threads), so a copier's resident
memory creeps far above what it holds. Here every part is read straight into one of a fixed
set of buffers (readinto), hashed and uploaded from it, then returned: resident memory is the
pool (max_buffer) plus interpreter and library overhead, whatever is copied.
"""

from __future__ import annotations

import threading
from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait

from dr.exporters.checkpointing.formats.tree import SeekableReader


class BufferPool:
    """At most `slots` buffers out at once; take() blocks until one is given back."""

    def __init__(self, limit: int, size: int) -> None:
        self.size = size
        self.slots = max(2, limit // size)
        self.peak = 0
        self._free: list[bytearray] = []
        self._out = 0
        self._cond = threading.Condition()

    def take(self, size: int) -> bytearray:
        with self._cond:
            self._cond.wait_for(lambda: self._out < self.slots)
            self._out += 1
            self.peak = max(self.peak, self._out)
            if size <= self.size:
                return self._free.pop() if self._free else bytearray(self.size)
        return bytearray(size)  # a part larger than the pool's (a file of over 10,000 parts)

    def give(self, buf: bytearray) -> None:
        with self._cond:
            self._out -= 1
            if len(buf) == self.size:
                self._free.append(buf)
            self._cond.notify()


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


class Parts:
    """One file's parts in flight. Every part's buffer goes back to the pool when its upload
    ends (or, for a file sent as one PUT, when the file is complete)."""

    def __init__(self, uploads: ThreadPoolExecutor, pool: BufferPool) -> None:
        self._uploads, self._pool = uploads, pool
        self._futures: list[tuple[Future, bytearray]] = []
        self._kept: list[bytearray] = []

    def submit(self, writer, number: int, buf: bytearray, view: memoryview, crc: str) -> None:
        if not writer.multipart:  # one PUT at complete(): the writer keeps the view until then
            writer.write(number, view, crc)
            self._kept.append(buf)
            return
        self._futures.append((self._uploads.submit(self._upload, writer, number, buf, view, crc), buf))

    def _upload(self, writer, number: int, buf: bytearray, view: memoryview, crc: str) -> None:
        try:
            writer.write(number, view, crc)
        finally:
            self._pool.give(buf)

    def settle(self) -> None:
        """Raise the first failed upload now, rather than after reading the whole file."""
        for future, _ in self._futures:
            if future.done() and future.exception() is not None:
                raise future.exception()

    def wait(self) -> None:
        futures = [f for f, _ in self._futures]
        wait(futures, return_when=FIRST_EXCEPTION)
        self.settle()
        wait(futures)
        self.settle()

    def cancel(self) -> None:
        for future, buf in self._futures:
            if future.cancel():
                self._pool.give(buf)  # never ran, so never gave it back
        wait([f for f, _ in self._futures])

    def finish(self) -> None:
        for buf in self._kept:
            self._pool.give(buf)
        self._kept.clear()
