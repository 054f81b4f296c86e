"""Retries for any store: dr's one policy (dr.kits.retrying), outside the stores, so every backend
behaves the same.

Only TransientStoreError is retried, with exponential backoff and full jitter (so many
threads throttled together do not come back together), bounded by `attempts` and `max_delay`.
After the last attempt the last TransientStoreError is raised as is.

Two cases need more than "call again":
- put: an attempt that timed out may still have stored the object, so a retry can meet
  ObjectExists. If the stored bytes equal ours, that earlier attempt succeeded: return.
  (Only on a retry: ObjectExists on the first attempt means someone else's object.)
- list: a listing that fails half way cannot resume without repeating keys, and the contract
  says each key exactly once; so the whole listing is collected under retry, then yielded.
- open: a stream that breaks mid-read (a reset while the body arrives) is opened again and
  read up to where it had got, then goes on; the failed read is repeated, under the same
  policy. Objects are write-once, so the bytes before the break are the same bytes again.
"""

from __future__ import annotations

import io
import time
from typing import BinaryIO, Callable, Iterator, TypeVar

from tenacity import Retrying

from dr.kits.retrying import ResumingReads, policy
from dr.repository.stores.base import ObjectExists, Store, StoreError, TransientStoreError

T = TypeVar("T")


class RetryingStore(Store):
    def __init__(self, inner: Store, attempts: int = 5, base_delay: float = 0.2,
                 max_delay: float = 10.0, sleep: Callable[[float], None] = time.sleep):
        if attempts < 1:
            raise ValueError("attempts must be at least 1")
        self.inner = inner
        self.description = inner.description
        self._attempts = attempts
        self._base_delay = base_delay
        self._max_delay = max_delay
        self._sleep = sleep  # injectable so tests do not wait

    def _retrying(self) -> Retrying:
        return policy(self._attempts, self._base_delay, self._max_delay, retry_on=TransientStoreError,
                      sleep=self._sleep)

    def _call(self, fn: Callable[[], T]) -> T:
        return self._retrying()(fn)

    def call(self, fn: Callable[[], T]) -> T:
        """Any other call on the inner store (an S3-only one), under the same retry policy."""
        return self._call(fn)

    def put(self, key: str, data: bytes) -> None:
        for attempt in self._retrying():
            with attempt:
                try:
                    self.inner.put(key, data)
                except ObjectExists:
                    if attempt.retry_state.attempt_number > 1 and self._call(lambda: self.inner.get(key)) == data:
                        return
                    raise

    def get(self, key: str) -> bytes:
        return self._call(lambda: self.inner.get(key))

    def open(self, key: str) -> BinaryIO:
        return io.BufferedReader(_ResumingStream(self, key), buffer_size=1 << 20)

    def exists(self, key: str) -> bool:
        return self._call(lambda: self.inner.exists(key))

    def list(self, prefix: str = "") -> Iterator[tuple[str, int]]:
        yield from self._call(lambda: list(self.inner.list(prefix)))

    def delete(self, key: str) -> None:
        self._call(lambda: self.inner.delete(key))

    def clear_staging(self) -> int:
        return self.inner.clear_staging()

    def close(self) -> None:
        self.inner.close()


class _ResumingStream(ResumingReads, io.RawIOBase):
    """A store object's stream that survives breaks: see the module docstring (open)."""

    _transient = TransientStoreError

    def __init__(self, store: RetryingStore, key: str) -> None:
        self._store, self._key = store, key
        self._stream = store._call(lambda: store.inner.open(key))

    def readable(self) -> bool:
        return True

    def _retrying(self) -> Retrying:
        return self._store._retrying()

    def _open_stream(self) -> BinaryIO:
        stream = self._store.inner.open(self._key)
        skip = self._offset
        try:
            while skip:
                dropped = len(stream.read(min(skip, 1 << 20)))
                if not dropped:
                    raise StoreError(f"{self._key}: shorter than the {self._offset} bytes read before the break")
                skip -= dropped
        except BaseException:
            stream.close()
            raise
        return stream

    def close(self) -> None:
        self._close_stream()
        super().close()
