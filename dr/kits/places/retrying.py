"""Retries for any place: one policy, outside the places, so directories and S3 behave the same.

The policy is dr's one (dr.kits.retrying), and this is dr's one storage retry wrapper: the
repository's stores are places too (dr/repository/stores/placing.py). Only TransientPlaceError is retried,
with exponential backoff and full jitter (threads throttled together do not come back
together), bounded by `attempts` and `max_delay`; after the last attempt the last error is
raised as is. Permanent errors (PlaceMissing, SourceChanged, access denied) are raised at once.

What needs more than "call again":
- put(create_only): an attempt that timed out may have written the file, so a retry can find
  the path taken. If the stored bytes equal ours, that earlier attempt succeeded: True.
  (Only on a retry: taken on the first attempt means someone else's file.)
- list_files: a listing that fails half-way cannot resume without repeating paths, and the
  contract says each once; so the whole listing is collected under retry, then yielded.
- open_read: a stream that breaks is re-opened at the offset it had reached (the same
  listing's ETag or `expect` still guards it), and the failed readinto is repeated.
- writer: parts, resumable_parts, complete and abort are retried (re-uploading a part number
  replaces it; S3Writer.complete accepts the object its lost-answer attempt completed).
- Server-side copies and Object Lock (s3locking.py) are S3-only and take the bare places: `call(place, fn)` runs them under
  the place's policy, `unwrapped(place)` gives the place inside.
"""

from __future__ import annotations

import time
from typing import Any, Callable, Iterator, TypeVar

from tenacity import Retrying

from dr.kits.places.files import FileStat
from dr.kits.places.contract import Place, Reader, Retention, TransientPlaceError, Upload, Writer
from dr.kits.retrying import ResumingReads, policy

T = TypeVar("T")


class RetryingPlace(Place):
    """A place whose transient failures are retried. Other attributes (is_s3, root, bucket,
    endpoint_url...) are the inner place's."""

    def __init__(self, inner: Place, attempts: int = 5, base_delay: float = 0.2, max_delay: float = 10.0,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        if attempts < 1:
            raise ValueError("attempts must be at least 1")
        self.inner = inner
        self.is_s3 = inner.is_s3
        self._attempts, self._base_delay, self._max_delay = attempts, base_delay, max_delay
        self._sleep = sleep  # injectable so tests do not wait

    def __repr__(self) -> str:
        return f"RetryingPlace({self.inner!r})"

    def __getattr__(self, name: str) -> Any:
        if name == "inner":  # not set yet (a copy being made): no recursion
            raise AttributeError(name)
        return getattr(self.inner, name)

    def retrying(self) -> Retrying:
        return policy(self._attempts, self._base_delay, self._max_delay, retry_on=TransientPlaceError,
                      sleep=self._sleep)

    def call(self, fn: Callable[[], T]) -> T:
        return self.retrying()(fn)

    # -- where ------------------------------------------------------------------------------
    @property
    def url(self) -> str:
        return self.inner.url

    def url_of(self, path: str) -> str:
        return self.inner.url_of(path)

    def location(self) -> dict:
        return self.inner.location()

    # -- reads ------------------------------------------------------------------------------
    def list_files(self, prefix: str = "") -> Iterator[FileStat]:
        yield from self.call(lambda: list(self.inner.list_files(prefix)))

    def read(self, path: str, start: int, length: int) -> bytes:
        return self.call(lambda: self.inner.read(path, start, length))

    def version(self, path: str) -> str:
        return self.call(lambda: self.inner.version(path))

    def open_read(self, path: str, expect: FileStat | None = None, offset: int = 0) -> "RetryingReader":
        return RetryingReader(self, path, expect, offset)

    def get(self, path: str) -> bytes | None:
        return self.call(lambda: self.inner.get(path))

    def head(self, path: str) -> tuple[int, str, str] | None:
        return self.call(lambda: self.inner.head(path))

    # -- writes -----------------------------------------------------------------------------
    def put(self, path: str, data: bytes, *, create_only: bool = False, sha256_b64: str = "",
            retain: Retention | None = None) -> bool:
        extra = {"retain": retain} if retain is not None else {}  # places without the capability
        for attempt in self.retrying():
            with attempt:
                if self.inner.put(path, data, create_only=create_only, sha256_b64=sha256_b64, **extra):
                    return True
                return attempt.retry_state.attempt_number > 1 and self.call(lambda: self.inner.get(path)) == data
        raise AssertionError("unreachable: tenacity re-raises the last error")

    def delete(self, path: str) -> None:
        self.call(lambda: self.inner.delete(path))

    def delete_many(self, paths: list[str]) -> None:
        self.call(lambda: self.inner.delete_many(paths))

    def pending_uploads(self, prefix: str = "") -> list[Upload]:
        return self.call(lambda: self.inner.pending_uploads(prefix))

    def abort(self, upload: Upload) -> None:
        self.call(lambda: self.inner.abort(upload))

    def writer(self, path: str, size: int, part_size: int) -> "RetryingWriter":
        return RetryingWriter(self, self.call(lambda: self.inner.writer(path, size, part_size)))


class RetryingReader(ResumingReads):
    """A sequential reader that re-opens its file where it had got to when the stream breaks."""

    _transient = TransientPlaceError

    def __init__(self, place: RetryingPlace, path: str, expect: FileStat | None, offset: int) -> None:
        self._place, self._path, self._expect, self._offset = place, path, expect, offset
        self._stream: Reader | None = place.call(self._open_stream)

    def _retrying(self) -> Retrying:
        return self._place.retrying()

    def _open_stream(self) -> Reader:
        return self._place.inner.open_read(self._path, self._expect, self._offset)

    def close(self) -> None:
        self._close_stream()


class RetryingWriter:
    """A writer whose requests are retried; matches() and keep() touch no storage."""

    def __init__(self, place: RetryingPlace, inner: Writer) -> None:
        self._place, self.inner = place, inner
        self.multipart, self.resumable = inner.multipart, inner.resumable

    def resumable_parts(self) -> dict[int, tuple]:
        return self._place.call(self.inner.resumable_parts)

    def matches(self, stored: tuple, data: memoryview, crc: str) -> bool:
        return self.inner.matches(stored, data, crc)

    def keep(self, number: int, stored: tuple, crc: str) -> None:
        self.inner.keep(number, stored, crc)

    def write(self, number: int, data: memoryview, crc: str = "") -> None:
        self._place.call(lambda: self.inner.write(number, data, crc))

    def complete(self, sha256_b64: str = "") -> None:
        self._place.call(lambda: self.inner.complete(sha256_b64))

    def abort(self, keep_for_resume: bool = False) -> None:
        self._place.call(lambda: self.inner.abort(keep_for_resume))


def unwrapped(place: Place) -> Place:
    """The place inside any RetryingPlace wrappers."""
    while isinstance(place, RetryingPlace):
        place = place.inner
    return place


def call(place: Place, fn: Callable[[], T]) -> T:
    """fn() under the place's retry policy, if it has one."""
    return place.call(fn) if isinstance(place, RetryingPlace) else fn()
