"""Object keys of the repository layout (docs/format.md, "Layout"). Nothing else builds keys."""

from __future__ import annotations

import hashlib
import re

FORMAT_NAME = "dr-repository"
FORMAT_VERSION = 1
CONFIG = "config"
BLOBS = "blobs/"
SNAPSHOTS = "snapshots/"
LOCKS = "locks/"
JOURNALS = "journals/"
DRILLS = "drills/"

_DIGEST = re.compile(r"^[0-9a-f]{64}$")


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def is_digest(text: str) -> bool:
    return bool(_DIGEST.match(text))


def blob_key(digest: str) -> str:
    if not is_digest(digest):
        raise ValueError(f"not a sha256 digest: {digest!r}")
    return f"{BLOBS}{digest[:2]}/{digest}"


def digest_of_blob_key(key: str) -> str | None:
    """The digest a blob key names, or None for anything not exactly at blob_key(digest)."""
    name = key.rsplit("/", 1)[-1]
    return name if is_digest(name) and key == blob_key(name) else None


def snapshot_key(snapshot_id: str) -> str:
    if not is_digest(snapshot_id):
        raise ValueError(f"not a snapshot id: {snapshot_id!r}")
    return f"{SNAPSHOTS}{snapshot_id}"


def lock_key(lock_id: str) -> str:
    return f"{LOCKS}{lock_id}"
