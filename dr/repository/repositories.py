"""A repository over a store: config, verified blobs, snapshot manifests (docs/format.md).

Every read is verified: an object named by a digest is hashed on read and refused if it does
not match. Every write is write-once. Higher-level flows (writing a snapshot, checking,
pruning) live in their own modules and use only what is here.
"""

from __future__ import annotations

import json
import secrets
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone
from typing import Iterator

from dr.model.snapshots import Snapshot
from dr.repository import layout
from dr.repository.manifest_cache import ManifestCache
from dr.repository.stores.base import ObjectExists, ObjectMissing, Store


MANIFEST_READERS = 8  # manifests fetched at once (snapshots())


class RepositoryError(Exception):
    pass


class IntegrityError(RepositoryError):
    """Stored data does not match its digest, or a referenced object is missing."""


class NotARepository(RepositoryError):
    pass


class Repository:
    def __init__(self, store: Store):
        self.store = store
        self.config: dict = {}

    @property
    def description(self) -> str:
        return self.store.description

    # -- config ----------------------------------------------------------------------------
    def init(self) -> dict:
        """Create the config if absent (idempotent); return it."""
        try:
            return self.open()
        except NotARepository:
            if self.store.exists(layout.CONFIG):
                # Either another process initialized the store between our read and this check
                # (read its config: format.md section 6), or something else lives here: then the
                # second open fails too, and we never write over it.
                return self.open()
        config = {
            "format": layout.FORMAT_NAME,
            "version": layout.FORMAT_VERSION,
            "id": secrets.token_hex(16),
            "created": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        }
        try:
            self.store.put(layout.CONFIG, _canonical(config))
        except ObjectExists:
            pass
        return self.open()

    def open(self) -> dict:
        try:
            config = json.loads(self.store.get(layout.CONFIG))
        except ObjectMissing:
            raise NotARepository(f"{self.description}: no repository here (no config object)") from None
        except ValueError:
            raise IntegrityError(f"{self.description}: config is not valid JSON") from None
        if config.get("format") != layout.FORMAT_NAME:
            raise NotARepository(f"{self.description}: config is not a dr repository config")
        if config.get("version") != layout.FORMAT_VERSION:
            raise RepositoryError(
                f"{self.description}: repository format version {config.get('version')}; "
                f"this dr reads version {layout.FORMAT_VERSION}")
        self.config = config
        return config

    # -- blobs -----------------------------------------------------------------------------
    def put_blob(self, data: bytes) -> str:
        digest = layout.sha256(data)
        try:
            self.store.put(layout.blob_key(digest), data)
        except ObjectExists:
            pass  # content-addressed: the same name holds the same bytes
        return digest

    def read_blob(self, digest: str) -> bytes:
        try:
            data = self.store.get(layout.blob_key(digest))
        except ObjectMissing:
            raise IntegrityError(f"blob {digest} is referenced but missing") from None
        actual = layout.sha256(data)
        if actual != digest:
            raise IntegrityError(f"blob {digest} is damaged: its content hashes to {actual}")
        return data

    def list_blobs(self) -> Iterator[tuple[str, int]]:
        for key, size in self.store.list(layout.BLOBS):
            digest = layout.digest_of_blob_key(key)
            if digest:
                yield digest, size

    # -- snapshots -------------------------------------------------------------------------
    def write_snapshot(self, snapshot: Snapshot) -> str:
        """Write the manifest (the last write of a backup); return the snapshot id."""
        data = _canonical(snapshot.to_json())
        snapshot.id = layout.sha256(data)
        try:
            self.store.put(layout.snapshot_key(snapshot.id), data)
        except ObjectExists:
            pass
        return snapshot.id

    def load_snapshot(self, snapshot_id: str) -> Snapshot:
        return Snapshot.from_json(json.loads(self._manifest(snapshot_id)), snapshot_id)

    def _manifest(self, snapshot_id: str) -> bytes:
        """A manifest's bytes from the store, checked against its id."""
        try:
            data = self.store.get(layout.snapshot_key(snapshot_id))
        except ObjectMissing:
            raise RepositoryError(f"no snapshot {snapshot_id}") from None
        if layout.sha256(data) != snapshot_id:
            raise IntegrityError(f"snapshot {snapshot_id} is damaged: its manifest does not match its id")
        return data

    def snapshot_ids(self) -> list[str]:
        return sorted(key[len(layout.SNAPSHOTS):] for key, _ in self.store.list(layout.SNAPSHOTS)
                      if layout.is_digest(key[len(layout.SNAPSHOTS):]))

    def snapshots(self, cache: ManifestCache | None = None) -> list[Snapshot]:
        """Every snapshot, oldest first. The manifests are fetched several at a time: a backup
        reads all of them to find each source's parent, one round trip each, and an hourly
        backup's repository holds many. Only a backup's parent search passes its local `cache`
        (checked against the ids like the store): verify and restore must see the store as it is."""
        ids = self.snapshot_ids()
        held: dict[str, bytes | None] = dict.fromkeys(ids)
        if cache is not None:
            cache.keep_only(ids)
            held = {i: cache.get(i) for i in ids}
        missing = [i for i in ids if held[i] is None]
        if len(missing) < 2:
            fetched = [self._manifest(i) for i in missing]
        else:
            with ThreadPoolExecutor(max_workers=min(MANIFEST_READERS, len(missing)),
                                    thread_name_prefix="manifests") as pool:
                fetched = list(pool.map(self._manifest, missing))
        for snapshot_id, data in zip(missing, fetched):
            held[snapshot_id] = data
            if cache is not None:
                cache.put(snapshot_id, data)
        loaded = [Snapshot.from_json(json.loads(data), i) for i, data in held.items()]
        return sorted(loaded, key=lambda s: s.time)

    def find_snapshot(self, ref: str) -> Snapshot:
        """Resolve 'latest' or a unique id prefix. (The newest good backup of one source:
        dr.model.snapshots.newest_good.)"""
        if ref == "latest":
            candidates = self.snapshots()
            if not candidates:
                raise RepositoryError(f"{self.description}: no snapshot")
            return candidates[-1]
        matches = [i for i in self.snapshot_ids() if i.startswith(ref.lower())]
        if len(matches) != 1:
            what = "no snapshot" if not matches else f"{len(matches)} snapshots"
            raise RepositoryError(f"{what} with an id starting '{ref}'")
        return self.load_snapshot(matches[0])

    def forget(self, snapshot_id: str) -> None:
        """Remove a snapshot manifest; its blobs stay until prune finds them unreferenced."""
        self.store.delete(layout.snapshot_key(snapshot_id))


def _canonical(data: dict) -> bytes:
    return json.dumps(data, sort_keys=True, separators=(",", ":")).encode()
