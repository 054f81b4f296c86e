"""A local cache of snapshot manifests (docs/format.md section 11, "Finding the parent").

A backup finds each source's parent by reading every manifest in the repository: one GET each.
An hourly CronJob that keeps a week holds 168 of them, and reading them all was most of what
an unchanged backup waited for (issue 15). A manifest never changes (its id is the SHA-256 of
its bytes), so a copy kept on local disk is as good as the stored one once it is verified
against its id, which every read here does: a damaged, truncated or planted file is dropped
and the manifest is read from the store again. restic keeps the same kind of cache.

Where: $DR_CACHE_DIR, else $XDG_CACHE_HOME/dr, else ~/.cache/dr; one folder per repository id.
DR_CACHE_DIR=off turns it off. A cache that cannot be written (a read-only root file system in
a pod) costs nothing but the reads it would have saved: the cache is never where data lives.
"""

from __future__ import annotations

import os
import re
import secrets

from dr.repository import layout

ENV = "DR_CACHE_DIR"
OFF = "off"
_REPOSITORY_ID = re.compile(r"^[0-9a-f]{32}$")  # format.md section 6
MAX_MANIFEST_BYTES = 16 << 20  # a manifest is ~0.5 KiB a source; a planted giant is not read whole


class ManifestCache:
    """The cached manifests of one repository, in a folder named by its config's random id
    (never its URL, which may carry a host or bucket name)."""

    def __init__(self, root: str, repository_id: str):
        self._folder = os.path.join(root, repository_id, "snapshots")

    @classmethod
    def default(cls, repository_id: str) -> "ManifestCache | None":
        """The cache where the environment puts it; None when it is off, or for a config
        whose id is not the 32 hex characters format.md section 6 gives it."""
        chosen = os.environ.get(ENV)
        if chosen == OFF or not _REPOSITORY_ID.match(repository_id):
            return None
        if not chosen:
            base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
            chosen = os.path.join(base, "dr")
        return cls(chosen, repository_id)

    def get(self, snapshot_id: str) -> bytes | None:
        path = self._path(snapshot_id)
        if path is None:
            return None
        try:
            with open(path, "rb") as handle:
                data = handle.read(MAX_MANIFEST_BYTES + 1)
        except OSError:
            return None
        if layout.sha256(data) == snapshot_id:
            return data
        self._drop(path)  # damaged or planted: the store's copy replaces it
        return None

    def put(self, snapshot_id: str, data: bytes) -> None:
        path = self._path(snapshot_id)
        if path is None:
            return
        # pids repeat across pods that share a cache volume: the name must be this writer's alone
        partial = f"{path}.{secrets.token_hex(8)}.partial"
        try:
            os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
            with open(partial, "wb") as handle:
                handle.write(data)
            os.replace(partial, path)  # readers see the whole manifest or none
        except OSError:
            self._drop(partial)

    def keep_only(self, snapshot_ids: list[str]) -> None:
        """Forget cached manifests of snapshots the repository no longer holds (pruned)."""
        try:
            names = os.listdir(self._folder)
        except OSError:
            return
        wanted = set(snapshot_ids)
        for name in names:
            if name not in wanted:
                self._drop(os.path.join(self._folder, name))

    def _path(self, snapshot_id: str) -> str | None:
        if not layout.is_digest(snapshot_id):
            return None
        return os.path.join(self._folder, snapshot_id)

    @staticmethod
    def _drop(path: str) -> None:
        try:
            os.unlink(path)
        except OSError:
            pass
