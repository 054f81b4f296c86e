"""A repository over a store: config, verified blobs, snapshot manifests (docs/format.md).

Every read is verified: an object named by a digest is hashed on read and refused if it does
not match. Every write is write-once. Higher-level flows (writing a snapshot, checking,
pruning) live in their own modules and use only what is here.
"""

from __future__ import annotations

import json
import re
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


class NoSuchSnapshot(RepositoryError):
    """No manifest under that id (never written, or forgotten by a prune)."""


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
        """Read and check the config (format.md section 6). A config that is there but is not a
        version-1 dr config is damaged data (exit 6), whatever byte changed: dr has only ever
        written version 1, so a version it does not read is a damaged config or a newer dr's."""
        try:
            data = self.store.get(layout.CONFIG)
        except ObjectMissing:
            raise NotARepository(f"{self.description}: no repository here (no config object)") from None
        self.config = _checked_config(self.description, data)
        return self.config

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
        return _parsed_manifest(snapshot_id, self._manifest(snapshot_id))

    def _manifest(self, snapshot_id: str) -> bytes:
        """A manifest's bytes from the store, checked against its id."""
        try:
            data = self.store.get(layout.snapshot_key(snapshot_id))
        except ObjectMissing:
            raise NoSuchSnapshot(f"no snapshot {snapshot_id}") from None
        if layout.sha256(data) != snapshot_id:
            raise IntegrityError(f"snapshot {snapshot_id} is damaged: its manifest does not match its id")
        return data

    def snapshot_ids(self) -> list[str]:
        return sorted(key[len(layout.SNAPSHOTS):] for key, _ in self.store.list(layout.SNAPSHOTS)
                      if layout.is_digest(key[len(layout.SNAPSHOTS):]))

    def snapshots(self, cache: ManifestCache | None = None) -> list[Snapshot]:
        """Every snapshot, oldest first; IntegrityError when any manifest is damaged. For
        readers that must see every snapshot or none (a restore of `latest`, the audit)."""
        intact, damaged = self.intact_snapshots(cache)
        if damaged:
            raise IntegrityError(f"{next(iter(damaged.values()))} (dr verify lists every damaged object; "
                                 "runbooks/damaged-snapshot.md says what to do)")
        return intact

    def intact_snapshots(self, cache: ManifestCache | None = None) -> tuple[list[Snapshot], dict[str, str]]:
        """The snapshots whose manifests are intact, oldest first, and {id: problem} of the
        others, for readers that go on past one damaged snapshot (verify, backup, prune, status).
        The manifests are fetched several at a time: a backup reads all of them to find each
        source's parent, one round trip each, and an hourly backup's repository holds many.
        Only a backup's parent search passes its local `cache` (checked against the ids like the
        store): verify and restore must see the store as it is. A manifest listed and gone when
        read was forgotten meanwhile (a prune beside a reader without the lock): it is no longer
        a snapshot, and no damage."""
        ids = self.snapshot_ids()
        held: dict[str, bytes | None] = dict.fromkeys(ids)
        if cache is not None:
            cache.keep_only(ids)
            held = {i: cache.get(i) for i in ids}
        missing = [i for i in ids if held[i] is None]
        if len(missing) < 2:
            fetched = [self._loaded(i) for i in missing]
        else:
            with ThreadPoolExecutor(max_workers=min(MANIFEST_READERS, len(missing)),
                                    thread_name_prefix="manifests") as pool:
                fetched = list(pool.map(self._loaded, missing))
        cached = [(i, _parsed_or_problem(i, data)) for i, data in held.items() if data is not None]
        intact: list[Snapshot] = [snapshot for _, (_, snapshot, problem) in cached if not problem]
        damaged: dict[str, str] = {i: problem for i, (_, _, problem) in cached if problem}
        for snapshot_id, loaded in zip(missing, fetched):
            if loaded is None:
                continue
            data, snapshot, problem = loaded
            if problem:
                damaged[snapshot_id] = problem
                continue
            intact.append(snapshot)
            if cache is not None:
                cache.put(snapshot_id, data)
        return sorted(intact, key=lambda s: s.time), damaged

    def _loaded(self, snapshot_id: str) -> tuple[bytes, Snapshot | None, str] | None:
        """(bytes, snapshot, problem), or None when the manifest is gone."""
        try:
            data = self._manifest(snapshot_id)
        except NoSuchSnapshot:
            return None
        except IntegrityError as exc:
            return b"", None, str(exc)
        return _parsed_or_problem(snapshot_id, data)

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


def _parsed_manifest(snapshot_id: str, data: bytes) -> Snapshot:
    """The snapshot a manifest's bytes describe. Bytes that match their id can still be hostile
    (anyone who can write the store can name a manifest by its own digest): every member a
    reader uses is checked, and what is wrong is said about the manifest, not about dr's code."""
    try:
        snapshot = Snapshot.from_json(json.loads(data), snapshot_id)
    except KeyError as exc:
        raise _hostile(snapshot_id, f"member {exc} is missing") from None
    except (ValueError, TypeError, AttributeError, RecursionError) as exc:  # a member of the wrong type or form, or nested past reading
        raise _hostile(snapshot_id, str(exc)[:200]) from None
    if not layout.is_digest(snapshot.catalog) or snapshot.catalog_entries < 0:
        raise _hostile(snapshot_id, f"catalog {{blob: {snapshot.catalog!r:.80}, entries: {snapshot.catalog_entries}}} "
                                    "is not a digest and a count")
    if not all(isinstance(s.name, str) and isinstance(s.error, str) for s in snapshot.sources):
        raise _hostile(snapshot_id, "a source's name or error is not a string")
    return snapshot


def _parsed_or_problem(snapshot_id: str, data: bytes) -> tuple[bytes, Snapshot | None, str]:
    """(data, the snapshot, "") or (data, None, what is wrong with the manifest)."""
    try:
        return data, _parsed_manifest(snapshot_id, data), ""
    except IntegrityError as exc:
        return data, None, str(exc)


def _hostile(snapshot_id: str, problem: str) -> IntegrityError:
    return IntegrityError(f"snapshot {snapshot_id}: manifest is damaged or hostile: {problem}")


def _checked_config(where: str, data: bytes) -> dict:
    try:
        config = json.loads(data)
    except (ValueError, RecursionError):
        raise IntegrityError(f"{where}: config is not valid JSON: it is damaged, or not a dr repository's") from None
    if not isinstance(config, dict) or config.get("format") != layout.FORMAT_NAME:
        raise IntegrityError(f"{where}: config is not a dr repository config (field 'format' is not "
                             f"{layout.FORMAT_NAME!r}): it is damaged, or not a dr repository's")
    version = config.get("version")
    if type(version) is not int or version != layout.FORMAT_VERSION:
        raise IntegrityError(f"{where}: repository format version {version!r}; this dr reads version "
                             f"{layout.FORMAT_VERSION}: the config is damaged, or a newer dr wrote it (use that dr)")
    for name, pattern in _CONFIG_FIELDS.items():
        if not isinstance(config.get(name), str) or not pattern.match(config[name]):
            raise IntegrityError(f"{where}: config field {name!r} is {config.get(name)!r}, not of the form "
                                 "format.md section 6 gives: the config is damaged")
    return config


_CONFIG_FIELDS = {"id": re.compile(r"^[0-9a-f]{32}$"),
                  "created": re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$")}


def _canonical(data: dict) -> bytes:
    return json.dumps(data, sort_keys=True, separators=(",", ":")).encode()
