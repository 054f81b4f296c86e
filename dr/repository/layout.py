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
# A restore id (and a drill id, which is its restore's): UTC start time, then a random part.
_RUN_ID = re.compile(r"^[0-9]{8}T[0-9]{6}Z-[0-9a-f]{8}$")
_SEGMENT = re.compile(r"^[A-Za-z0-9._-]+$")
_JOURNAL_RECORD = re.compile(r"^([0-9]{6})-([A-Za-z0-9._-]+)\.json$")


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def is_digest(text: str) -> bool:
    return isinstance(text, str) and bool(_DIGEST.match(text))  # a hostile manifest may hold anything


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


def is_run_id(text: str) -> bool:
    """Whether `text` has the form of a restore id (docs/format.md 4.1), which drill ids share."""
    return bool(_RUN_ID.match(text))


def _run_id(run_id: str, what: str) -> str:
    if not is_run_id(run_id):
        raise ValueError(f"not a {what} id (YYYYmmddTHHMMSSZ-<8 hex>): {run_id!r}")
    return run_id


def journal_prefix(restore_id: str) -> str:
    return f"{JOURNALS}{_run_id(restore_id, 'restore')}/"


def journal_record_key(restore_id: str, seq: int, name: str) -> str:
    if not 0 <= seq <= 999_999 or not _SEGMENT.match(name) or name in (".", ".."):
        raise ValueError(f"no journal record key for seq {seq!r}, name {name!r}")
    return f"{journal_prefix(restore_id)}{seq:06d}-{name}.json"


def restore_id_of_journal_key(key: str) -> str | None:
    """The restore id a key under journals/ belongs to, or None when its folder is not one."""
    restore_id = key[len(JOURNALS):].split("/", 1)[0] if key.startswith(JOURNALS) else ""
    return restore_id if is_run_id(restore_id) else None


def seq_of_journal_record_key(key: str) -> int | None:
    """The <seq> of a journal record's key, or None for a key not of the form <seq>-<name>.json."""
    match = _JOURNAL_RECORD.match(key.rsplit("/", 1)[-1])
    return int(match.group(1)) if match and restore_id_of_journal_key(key) and key.count("/") == 2 else None


def drill_record_key(drill_id: str) -> str:
    return f"{DRILLS}{_run_id(drill_id, 'drill')}.json"


def drill_id_of_key(key: str) -> str | None:
    """The drill id a key names, or None for anything not exactly at drill_record_key(id)."""
    name = key[len(DRILLS):] if key.startswith(DRILLS) else ""
    drill_id = name[:-len(".json")] if name.endswith(".json") else ""
    return drill_id if is_run_id(drill_id) else None
