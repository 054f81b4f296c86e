"""A repository in a local directory: the embedded default, and any mounted filesystem.

A directory place (dr/kits/places/local.py) with the staging directory tmp/, seen through
PlaceStore (placing.py). Atomic, write-once put: the data is written and fsynced under tmp/,
then hard-linked to its final name. link(2) fails if the name exists, so a put never replaces
an object, and a crash leaves at most an orphan under tmp/ (never listed; removed by prune's
clear_staging), never a partial object. The layout is docs/format.md's: objects at their keys,
tmp/ for staging only.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

from dr.kits.places.local import LocalPlace
from dr.repository.stores.base import PutBatch, check_key
from dr.repository.stores.placing import PlaceStore, store_errors

TMP_DIR = "tmp"


class LocalStore(PlaceStore):
    def __init__(self, root: str):
        # Nothing is created until the first put: a read-only command (dr snapshots, verify,
        # status) pointed at a missing directory says there is no repository and leaves no trace.
        self.root = os.path.abspath(root)
        super().__init__(LocalPlace(self.root, staging=TMP_DIR), f"file://{self.root}", stages=True)

    def batch(self) -> PutBatch:
        return _StagedBatch(self)


class _StagedBatch(PutBatch):
    """Objects written under tmp/ without an fsync; publish() fsyncs them together, links each to
    its key (create-only) and fsyncs the keys' directories. Until then no reader sees them, so a
    crash, an interrupt or a failed backup leaves only tmp/ files (removed by discard, or by
    prune's clear_staging), never an object whose bytes a power loss could have lost."""

    def __init__(self, store: LocalStore):
        super().__init__(store)
        self._staged: list[tuple[Path, str]] = []
        self._lock = threading.Lock()

    def put(self, key: str, data: bytes) -> None:
        check_key(key)
        with store_errors(key):
            tmp = self.store.place.stage(key, data)
        with self._lock:
            self._staged.append((tmp, key))

    def publish(self) -> int:
        with self._lock:
            staged, self._staged = self._staged, []
        if not staged:
            return 0
        try:
            with store_errors():
                return self.store.place.publish_staged(staged)
        except BaseException:
            self.store.place.discard_staged(staged)
            raise

    def discard(self) -> None:
        with self._lock:
            staged, self._staged = self._staged, []
        self.store.place.discard_staged(staged)
