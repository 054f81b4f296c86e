"""PlaceStore: the store contract (base.py) over a place (dr/kits/places/contract.py).

dr has one storage contract, the kit's places, with one retrying wrapper (RetryingPlace) and
one conformance suite for storage (dr/kits/places/conformance.py); a store is a place seen
through the repository's object semantics, and this adapter is all the repository adds:
- write-once: put is the place's create-only put; False (the key is taken) is ObjectExists.
  Under RetryingPlace, a put whose lost-answer attempt stored the object finds the stored
  bytes equal to its own on the retry and succeeds (RetryingPlace.put).
- keys are checked against the store's key rule (base.check_key) before the place is asked.
- list(prefix) takes any string prefix: the place lists the directory the prefix ends in (the
  whole prefix, for the '/'-terminated prefixes the repository uses: one request per page on
  S3) and the keys that do not start with the prefix are dropped.
- get and open of an absent key raise ObjectMissing; a PlaceError becomes a StoreError
  (TransientStoreError when the place says retrying may help), with its message and cause.
- clear_staging aborts what crashed puts left in the place's staging directory (a local
  repository's tmp/, LocalPlace(staging=...)), only for a place that stages. An S3 prefix
  stages nothing (a PUT is atomic), and its pending uploads are multipart uploads, which the
  repository never makes and which, in a shared bucket, may be another program's.
"""

from __future__ import annotations

import base64
import hashlib
import io
from contextlib import contextmanager
from typing import BinaryIO, Callable, Iterator, TypeVar

from dr.kits.places.contract import Place, PlaceError, PlaceMissing, Reader, TransientPlaceError
from dr.kits.places.retrying import call
from dr.repository.stores.base import (ObjectExists, ObjectMissing, Store, StoreError, TransientStoreError,
                                       check_key)

T = TypeVar("T")


class PlaceStore(Store):
    """A store over `place`; `stages`: the place's puts leave leftovers in a staging directory
    after a crash, which clear_staging removes."""

    def __init__(self, place: Place, description: str, stages: bool = False):
        self.place = place
        self.description = description
        self._stages = stages

    def put(self, key: str, data: bytes) -> None:
        self._put(key, data)

    def _put(self, key: str, data: bytes, **extra) -> None:
        check_key(key)
        digest = _sha256_b64(data) if self.place.is_s3 else ""  # S3 checks it; a directory cannot
        with store_errors(key):
            if not self.place.put(key, data, create_only=True, sha256_b64=digest, **extra):
                raise ObjectExists(key)

    def get(self, key: str) -> bytes:
        check_key(key)
        with store_errors(key):
            data = self.place.get(key)
        if data is None:
            raise ObjectMissing(key)
        return data

    def open(self, key: str) -> BinaryIO:
        check_key(key)
        with store_errors(key):
            reader = self.place.open_read(key)
        return io.BufferedReader(_Stream(reader, key), buffer_size=1 << 20)

    def exists(self, key: str) -> bool:
        check_key(key)
        with store_errors(key):
            return self.place.head(key) is not None

    def list(self, prefix: str = "") -> Iterator[tuple[str, int]]:
        directory = prefix.rsplit("/", 1)[0] if "/" in prefix else ""
        with store_errors():
            for f in self.place.list_files(directory):
                if f.path.startswith(prefix):
                    yield f.path, f.size

    def delete(self, key: str) -> None:
        check_key(key)
        with store_errors(key):
            self.place.delete(key)

    def clear_staging(self) -> int:
        """Only called under the repository's exclusive lock, so no live writer is staging."""
        if not self._stages:
            return 0
        with store_errors():
            leftovers = self.place.pending_uploads("")
            for upload in leftovers:
                self.place.abort(upload)
        return len(leftovers)

    def call(self, fn: Callable[[], T]) -> T:
        """fn() (a request to the bare place: S3 Object Lock) under the place's retry policy,
        its errors as store errors."""
        with store_errors():
            return call(self.place, fn)

    def close(self) -> None:
        closing = getattr(self.place, "close", None)
        if closing is not None:
            closing()


@contextmanager
def store_errors(key: str = "") -> Iterator[None]:
    """A place's errors as the store contract's: PlaceMissing -> ObjectMissing(key), transient
    -> TransientStoreError, the rest StoreError; the message is the place's (it names the object)."""
    try:
        yield
    except PlaceMissing as exc:
        raise ObjectMissing(key or str(exc)) from exc
    except TransientPlaceError as exc:
        raise TransientStoreError(str(exc)) from exc
    except PlaceError as exc:
        raise StoreError(str(exc)) from exc


class _Stream(io.RawIOBase):
    """An opened object: the place's Reader as a raw file, its failures store errors."""

    def __init__(self, reader: Reader, key: str):
        super().__init__()
        self._reader, self._key = reader, key

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:  # type: ignore[no-untyped-def]
        with store_errors(self._key):
            return self._reader.readinto(memoryview(buffer).cast("B"))

    def close(self) -> None:
        if not self.closed:
            with store_errors(self._key):
                self._reader.close()
        super().close()


def _sha256_b64(data: bytes) -> str:
    return base64.b64encode(hashlib.sha256(data).digest()).decode()
