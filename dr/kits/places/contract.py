"""The place contract: what dr needs from where files live (the kit's one storage contract).

A place is a root (a directory, an S3 prefix on one endpoint) holding files at '/'-separated
relative paths. The checkpoint exporter (its copier, completeness checks, verification and
restore), the MLflow exporter's weight copies and the repository's stores (PlaceStore,
dr/repository/stores/placing.py: write-once objects over a place) work through this contract
only, so a new kind of place is one class that passes the conformance suite (conformance.py,
importable: `check_place(place)`). Modelled on kopia's blob storage. Retries are a wrapper
(retrying.py), never code inside a place.

Contract, for every method:
- Paths are '/'-separated and relative; '', '.', '..' segments and a leading '/' are refused
  with ValueError before storage is touched. A prefix names a directory ('' = the root).
- Read-after-write: once put() returns, or a writer's complete() returns, get, head, read,
  open_read and list_files see the new file, whole.
- put(path, data) is atomic: a reader sees the old file (or none) or all of `data`, never a
  part, and a crash leaves nothing visible at `path`. It replaces an existing file, unless
  create_only: then it returns False and leaves the existing file untouched (two racing
  create-only writers: one True, one False). `sha256_b64`, when given, is the base64 SHA-256
  of `data`; a place that can verify or keep it does (S3 refuses a body that does not match).
- get(path) is the whole file, None if absent. head(path) is (size, version, stored base64
  SHA-256 or ''), None if absent.
- list_files(prefix) yields a FileStat (path relative to the root, size, mtime_ns) for every
  complete file under the directory `prefix`, recursively, each exactly once, all of them
  (it pages through everything), in no promised order. Files being written (a writer's
  partial, an uncompleted multipart upload) and directory markers are never listed. A prefix
  that does not exist lists nothing.
- version(path) is a token that changes when the file is replaced ('' if absent or unknown).
  A place may answer from its last listing (S3: the ETag it listed).
- read(path, start, length) is up to `length` bytes from `start`, fewer only at the end of
  the file, b"" at or past it. open_read(path, expect, offset) is a sequential Reader from
  `offset`. Both raise PlaceMissing if the file is absent, and SourceChanged if it is no longer
  what was listed (S3: the listed ETag, sent as If-Match; a directory: `expect`'s size and
  mtime, checked at open and at close).
- A Reader's readinto(view) fills `view` and returns its length, fewer bytes only at the end
  of the file. After it raises, the reader is spent and `view` is undefined: the caller opens
  a new reader at the offset it had reached (RetryingPlace does this).
- writer(path, size, part_size) writes one file by parts, from several threads, in any
  order; nothing is visible at `path` until complete(), which publishes the whole file at
  once. abort() removes what was written, unless keep_for_resume: then the partial stays, is
  listed by pending_uploads, and a later writer of the same path and part size offers its
  parts through resumable_parts() (a part is reused only where matches() says its bytes are
  the source's).
- pending_uploads(prefix) lists writers that were neither completed nor aborted (a killed
  copier's); abort(upload) removes one. Removing something absent is not an error: delete,
  delete_many (each path; not atomic as a whole) and abort.
- Optional capabilities (a place without one says so as stated; callers ask before relying):
  - put(..., retain=Retention(mode, until)): the file is stored under S3 Object Lock
    retention (it cannot be deleted or replaced before `until`). Only S3Place has it (and
    only on a bucket with Object Lock: s3locking.lock_enabled); every other place raises
    PermanentPlaceError, writing nothing. The rest of Object Lock (retention of a stored
    file, its versions, delete markers) is S3-only, in s3locking.py, like server-side copies.
  - A staging directory (LocalPlace(root, staging="tmp")): create-only and plain puts are
    written there and linked or renamed into place, never beside the target; the staging
    directory is never listed, and pending_uploads('') includes what crashed puts left in it
    (abort removes one). Puts to a path inside it raise ValueError.
- location() says where the place is, for manifests and records (never credentials); url
  and url_of(path) are for messages.
- Errors: every failure of storage raises a PlaceError, which is an OSError (callers that
  judge "unreadable" treat both alike). TransientPlaceError: retrying the same call may
  succeed (throttling, 5xx, timeouts, a connection refused or reset, also while a body is
  read). PermanentPlaceError: it will not (not found, access denied, no such bucket, bad
  request, another writer holds the partial); PlaceMissing and SourceChanged are permanent.
- Places are safe to call from several threads at once.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from datetime import datetime
from typing import Iterator, Protocol

from dr.kits.places.files import FileStat
from dr.kits.retrying import Transient


class PlaceError(OSError):
    """A place's storage failed. Subclasses say whether retrying may help."""


class TransientPlaceError(PlaceError, Transient):
    """Retrying the same call may succeed: throttled, server error, timed out, connection lost."""


class PermanentPlaceError(PlaceError):
    """Retrying will not help: not found, access denied, no such bucket, bad request."""


class PlaceMissing(PermanentPlaceError, FileNotFoundError):
    """No file at that path."""


class SourceChanged(PermanentPlaceError):
    """A file changed (or vanished) between the listing that judged it and the copy."""


@dataclass(frozen=True)
class Retention:
    """S3 Object Lock retention for one put: "GOVERNANCE" or "COMPLIANCE", and until when."""

    mode: str
    until: datetime


@dataclass(frozen=True)
class Upload:
    """A writer that was started and neither completed nor aborted (an S3 multipart upload,
    a directory's partial file)."""

    path: str
    upload_id: str
    initiated: float  # seconds since the epoch


class Reader(Protocol):
    def readinto(self, view: memoryview) -> int:
        """Fill `view`; fewer bytes only at the end of the file."""

    def close(self) -> None:
        """Release the stream (a directory's reader checks the file against `expect` here)."""


class Writer(Protocol):
    multipart: bool  # written by parts (else kept whole until complete())
    resumable: bool  # abort(keep_for_resume=True) keeps the parts for a later writer

    def resumable_parts(self) -> dict[int, tuple]:
        """Part number -> what is stored of it, from an earlier writer of this path."""

    def matches(self, stored: tuple, data: memoryview, crc: str) -> bool:
        """Whether the stored part holds exactly `data` (crc: its base64 CRC32)."""

    def keep(self, number: int, stored: tuple, crc: str) -> None:
        """Use the stored part as part `number` instead of writing it."""

    def write(self, number: int, data: memoryview, crc: str = "") -> None:
        """Write part `number` (1-based) at its offset; any order, any thread."""

    def complete(self, sha256_b64: str = "") -> None:
        """Publish the whole file at once."""

    def abort(self, keep_for_resume: bool = False) -> None:
        """Stop; remove what was written unless keep_for_resume."""


class Place(ABC):
    """Where checkpoints or their copies live. Read the module docstring for the contract."""

    is_s3: bool = False

    @property
    @abstractmethod
    def url(self) -> str:
        """The root, for messages."""

    @abstractmethod
    def url_of(self, path: str) -> str:
        """One file, for messages."""

    @abstractmethod
    def location(self) -> dict:
        """Where this is, as recorded in manifests and snapshot records (never credentials)."""

    @abstractmethod
    def list_files(self, prefix: str = "") -> Iterator[FileStat]:
        """Every complete file under directory `prefix`, each once, all of them."""

    @abstractmethod
    def read(self, path: str, start: int, length: int) -> bytes:
        """Up to `length` bytes from `start`; PlaceMissing if absent."""

    @abstractmethod
    def version(self, path: str) -> str:
        """A token that changes when the file is replaced; '' if absent or unknown."""

    @abstractmethod
    def open_read(self, path: str, expect: FileStat | None = None, offset: int = 0) -> Reader:
        """A sequential reader from `offset`; PlaceMissing if absent, SourceChanged if changed."""

    @abstractmethod
    def get(self, path: str) -> bytes | None:
        """The whole file; None if absent."""

    @abstractmethod
    def head(self, path: str) -> tuple[int, str, str] | None:
        """(size, version, base64 SHA-256 or ''); None if absent."""

    @abstractmethod
    def put(self, path: str, data: bytes, *, create_only: bool = False, sha256_b64: str = "",
            retain: Retention | None = None) -> bool:
        """Write `data` atomically; False (nothing written) if create_only and the path exists.
        `retain`: Object Lock retention, an optional capability (see the module docstring)."""

    @abstractmethod
    def delete(self, path: str) -> None:
        """Remove the file; no error if absent."""

    @abstractmethod
    def delete_many(self, paths: list[str]) -> None:
        """Remove every file named; no error for absent ones."""

    @abstractmethod
    def pending_uploads(self, prefix: str = "") -> list[Upload]:
        """Writers under `prefix` (a path, or a directory ending in '/') neither completed
        nor aborted."""

    @abstractmethod
    def abort(self, upload: Upload) -> None:
        """Remove a pending upload; no error if it is gone."""

    @abstractmethod
    def writer(self, path: str, size: int, part_size: int) -> Writer:
        """A writer of one file of `size` bytes in parts of `part_size`."""
