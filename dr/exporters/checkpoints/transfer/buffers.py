"""Part buffers for the copier: allocated once, reused, and the only place file bytes live.

Why: copying a 1 TB checkpoint must not need more memory than copying 1 GB. A fresh `bytes`
per part read lets the allocator keep freed parts around (glibc's mmap threshold grows after
the first large free, and freed heap blocks fragment across threads), so a copier's resident
memory creeps far above what it holds. Here every part is read straight into one of a fixed
set of buffers (readinto), hashed and uploaded from it, then returned: resident memory is the
pool (max_buffer) plus interpreter and library overhead, whatever is copied.

Buffers are anonymous memory maps, not heap objects: parts now vary in size with the file
(dr/kits/places/parts.py, part_size_for), so buffers are also dropped, and a dropped map goes
back to the system at once, where a freed heap block of the same size may not.
"""

from __future__ import annotations

import mmap
import threading
from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait



class BufferPool:
    """Buffers of any size, at most `limit` bytes of them out at once: take() blocks until the
    bytes are free (a single buffer larger than `limit` waits until nothing else is out).

    Parts of one size are reused; buffers of other sizes (a file's last part, a file sent in
    one PUT) are kept only while the kept and the lent together stay within `limit`, so
    resident file data never exceeds it. `slots` is how many of the smallest parts fit: the
    number of upload threads worth running."""

    def __init__(self, limit: int, smallest: int) -> None:
        self.limit = limit
        self.slots = max(2, limit // smallest)
        self.peak = 0  # the most bytes ever out at once
        self._free: dict[int, list[mmap.mmap]] = {}
        self._out = 0
        self._kept = 0
        self._cond = threading.Condition()

    def take(self, size: int) -> mmap.mmap:
        with self._cond:
            self._cond.wait_for(lambda: self._out == 0 or self._out + size <= self.limit)
            self._out += size
            self.peak = max(self.peak, self._out)
            same = self._free.get(size)
            if same:
                self._kept -= size
                return same.pop()
            self._trim(self.limit - self._out - size)
        return mmap.mmap(-1, size) if size else bytearray()

    def give(self, buf: mmap.mmap) -> None:
        with self._cond:
            self._out -= len(buf)
            self._free.setdefault(len(buf), []).append(buf)
            self._kept += len(buf)
            self._trim(self.limit - self._out)
            self._cond.notify_all()

    def _trim(self, room: int) -> None:
        """Drop kept buffers, odd sizes first, until they take at most `room` bytes."""
        for size in sorted(self._free, key=lambda n: len(self._free[n])):
            while self._kept > max(room, 0) and self._free[size]:
                self._free[size].pop()
                self._kept -= size


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
