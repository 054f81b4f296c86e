"""Counts what a store is asked to do, so tests can prove claims like "the second backup
uploads no data" by numbers rather than by timing.

puts and bytes_put count every put call and the bytes handed to it, including puts refused
with ObjectExists: such a put still sends its body over the network (a conditional PUT is
refused after the upload), so a backup that "dedups" by letting puts fail still costs
bandwidth, and the count must show it. puts_refused counts those refusals.
gets/bytes_got count get and open calls and the bytes they returned; lists counts list
calls; deletes counts delete calls. All counters are updated under one lock.
"""

from __future__ import annotations

import io
import threading
from typing import BinaryIO, Iterator

from dr.repository.stores.base import ObjectExists, PutBatch, Store

_FIELDS = ("puts", "bytes_put", "puts_refused", "gets", "bytes_got", "lists", "deletes")


class CountingStore(Store):
    def __init__(self, inner: Store):
        self.inner = inner
        self.description = inner.description
        self._lock = threading.Lock()
        self.reset()

    def reset(self) -> None:
        with self._lock:
            for field in _FIELDS:
                setattr(self, field, 0)

    def counts(self) -> dict[str, int]:
        """A consistent snapshot of every counter."""
        with self._lock:
            return {field: getattr(self, field) for field in _FIELDS}

    def _add(self, **deltas: int) -> None:
        with self._lock:
            for field, delta in deltas.items():
                setattr(self, field, getattr(self, field) + delta)

    def put(self, key: str, data: bytes) -> None:
        self._add(puts=1, bytes_put=len(data))
        try:
            self.inner.put(key, data)
        except ObjectExists:
            self._add(puts_refused=1)
            raise

    def get(self, key: str) -> bytes:
        data = self.inner.get(key)
        self._add(gets=1, bytes_got=len(data))
        return data

    def open(self, key: str) -> BinaryIO:
        stream = self.inner.open(key)
        self._add(gets=1)
        return io.BufferedReader(_CountingReader(stream, self), buffer_size=1 << 20)

    def exists(self, key: str) -> bool:
        return self.inner.exists(key)

    def list(self, prefix: str = "") -> Iterator[tuple[str, int]]:
        self._add(lists=1)
        return self.inner.list(prefix)

    def delete(self, key: str) -> None:
        self._add(deletes=1)
        self.inner.delete(key)

    def batch(self) -> PutBatch:
        return _CountingBatch(self, self.inner.batch())

    def clear_staging(self) -> int:
        return self.inner.clear_staging()

    def close(self) -> None:
        self.inner.close()


class _CountingBatch(PutBatch):
    """The inner store's batch, its puts counted as puts (a refused key at publish, too)."""

    def __init__(self, owner: CountingStore, inner: PutBatch):
        super().__init__(owner)
        self.owner, self.inner = owner, inner

    def put(self, key: str, data: bytes) -> None:
        self.owner._add(puts=1, bytes_put=len(data))
        try:
            self.inner.put(key, data)
        except ObjectExists:
            self.owner._add(puts_refused=1)
            raise

    def publish(self) -> int:
        taken = self.inner.publish()
        self.owner._add(puts_refused=taken)
        return taken

    def discard(self) -> None:
        self.inner.discard()


class _CountingReader(io.RawIOBase):
    """Adds the bytes actually read from an opened object to bytes_got."""

    def __init__(self, stream: BinaryIO, owner: CountingStore):
        self._stream = stream
        self._owner = owner

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        chunk = self._stream.read(len(buffer))
        buffer[: len(chunk)] = chunk
        self._owner._add(bytes_got=len(chunk))
        return len(chunk)

    def readall(self) -> bytes:
        data = self._stream.read()
        self._owner._add(bytes_got=len(data))
        return data

    def close(self) -> None:
        if not self.closed:
            self._stream.close()
        super().close()
