"""The store contract: the few things a repository needs from where its objects live.

Every implementation (local directory, S3) passes the same conformance suite
(tests/conformance/test_store_contract.py). dr's stores are places of the kit
(dr/kits/places/: one storage contract for the repository, checkpoints and MLflow weight
copies) seen through PlaceStore (placing.py), which turns the place contract into this one.
Retries, counting and logging are wrappers, never code inside a store: retries are the
places' one wrapper (RetryingPlace, under the store), counting is counting.py (over it).

Contract, for every method:
- Keys are '/'-separated relative paths of [A-Za-z0-9._-] segments; no '..', no leading '/'.
  An implementation raises ValueError for any other key, before touching storage.
- put(key, data) is atomic: a reader sees either no object or all of `data`, never a part.
  Objects are write-once: put on an existing key raises ObjectExists and leaves the stored
  object unchanged. (The repository never needs to overwrite; see docs/format.md. This is
  what lets a bucket with S3 Object Lock hold a repository.)
- After put returns, get, exists and list see the object (read-after-write).
- get(key) returns the whole object; a missing key raises ObjectMissing.
- open(key) returns a binary file object that streams the object; the caller closes it.
- list(prefix) yields (key, size) for every object whose key starts with prefix, in no
  particular order, each exactly once, and is complete: it pages through everything.
- delete(key) removes the object; deleting a missing key is not an error.
- batch() returns a PutBatch: its put(key, data) may defer the object's durability and
  visibility until publish() (a local repository's blobs: their fsyncs issued together, not one
  blob after another); publish() makes every object of the batch durable and visible, whole, and
  returns how many keys were already taken (their objects unchanged); discard() drops what was
  not published. A writer publishes before it writes anything that references the batch's
  objects. The default batch puts at once (S3: each PUT is atomic and durable).
- clear_staging() removes what crashed writers left in the store's private staging area
  (never visible as objects) and returns how many it removed; prune calls it under the
  exclusive lock. Stores whose put needs no staging (S3) keep the default: nothing, 0.
- Errors worth retrying (throttling, timeouts, 5xx) raise TransientStoreError; everything
  else is permanent (StoreError and subclasses).
- Implementations are safe to call from several threads at once.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from typing import BinaryIO, Iterator

from dr.kits.retrying import Transient

_KEY = re.compile(r"^[A-Za-z0-9._-]+(/[A-Za-z0-9._-]+)*$")


class StoreError(Exception):
    """A permanent store failure: retrying will not help."""


class TransientStoreError(StoreError, Transient):
    """A failure worth retrying (throttled, timed out, server error)."""


class ObjectMissing(StoreError):
    """No object at that key."""


class ObjectExists(StoreError):
    """An object already exists at that key and objects are write-once."""


def check_key(key: str) -> str:
    if not _KEY.match(key) or any(part in (".", "..") for part in key.split("/")):
        raise ValueError(f"invalid store key {key!r}")
    return key


class Store(ABC):
    """Where a repository's objects live. Read the module docstring for the contract."""

    #: a URL-like description for messages; never contains credentials
    description: str = ""

    @abstractmethod
    def put(self, key: str, data: bytes) -> None:
        """Store `data` at `key` atomically; ObjectExists if the key is taken."""

    @abstractmethod
    def get(self, key: str) -> bytes:
        """The whole object; ObjectMissing if absent."""

    @abstractmethod
    def open(self, key: str) -> BinaryIO:
        """A streaming reader over the object; ObjectMissing if absent."""

    @abstractmethod
    def exists(self, key: str) -> bool:
        """Whether an object is stored at `key`."""

    @abstractmethod
    def list(self, prefix: str = "") -> Iterator[tuple[str, int]]:
        """(key, size) for every object under prefix, each once, all of them."""

    @abstractmethod
    def delete(self, key: str) -> None:
        """Remove the object; no error if it is absent."""

    def batch(self) -> "PutBatch":
        """Puts whose durability may wait for publish() (the module docstring)."""
        return PutBatch(self)

    def clear_staging(self) -> int:
        """Remove crashed writers' staging leftovers; how many. The default stages nothing."""
        return 0

    def close(self) -> None:
        """Release connections; the default has nothing to release."""


class PutBatch:
    """The default batch: each put is a store put, at once; publish and discard have nothing to do."""

    def __init__(self, store: Store):
        self.store = store
        self.taken = 0

    def put(self, key: str, data: bytes) -> None:
        """ObjectExists when the key is taken now; a deferring batch counts that at publish."""
        self.store.put(key, data)

    def publish(self) -> int:
        return 0

    def discard(self) -> None:
        pass
