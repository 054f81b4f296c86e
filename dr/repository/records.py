"""Records: the write-once JSON objects of journals/ and drills/ (docs/format.md 4.1, 4.2, 5).

Where it sits: dr.repository.journals and dr.repository.drill_records build on this; it holds
what the two kinds share. A record is one compact JSON object with sorted keys; unlike the
config and manifests it is not canonical in every case (values JSON cannot hold are written as
their text), which is why no digest of it is ever taken.

Reading is bounded, because a repository may be written by someone else: an object larger
than MAX_RECORD_BYTES is refused before its content is fetched, and at most that many bytes
are ever read, so a hostile or damaged object costs bounded memory and (JSON parsing being
linear, nesting being capped by the parser) bounded time. Anything at a record's key that is
not a valid record is refused with a MalformedRecord error naming the key and the fault.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Any, Callable

from dr.repository.repositories import RepositoryError
from dr.repository.stores.base import ObjectExists, Store

# Far above what dr writes (a plan record holds one short entry per source; a step record at
# most 50 failed items), far below what would hurt a reader.
MAX_RECORD_BYTES = 16 << 20


class MalformedRecord(RepositoryError):
    """An object where docs/format.md puts a journal or drill record is not a valid one."""


class RecordExists(RepositoryError):
    """A record's key is taken: records are written once, never rewritten."""


def utc(moment: datetime | None = None) -> str:
    """A record's time: UTC, `YYYY-MM-DDTHH:MM:SS.ffffffZ` (docs/format.md 4.1, `time`)."""
    return (moment or datetime.now(timezone.utc)).astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def encode(record: dict[str, Any]) -> bytes:
    data = json.dumps(record, sort_keys=True, separators=(",", ":"), default=str).encode()
    if len(data) > MAX_RECORD_BYTES:
        raise ValueError(f"a record of {len(data)} bytes is over the {MAX_RECORD_BYTES}-byte limit readers keep")
    return data


def put(store: Store, key: str, record: dict[str, Any], check: Callable[[dict[str, Any], str], None]) -> None:
    """Write a record once; RecordExists when the key is taken (the stored one is unchanged).

    `check` sees the record as a reader will (decoded from the bytes to be written), so dr never
    writes a record that it would refuse to read.
    """
    data = encode(record)
    check(decode(data, key), key)
    try:
        store.put(key, data)
    except ObjectExists:
        raise RecordExists(f"{key} already exists") from None


def decode(data: bytes, key: str) -> dict[str, Any]:
    """The JSON object a record holds; MalformedRecord when it is not one."""
    if len(data) > MAX_RECORD_BYTES:
        raise MalformedRecord(f"{key}: {len(data)} bytes, over the {MAX_RECORD_BYTES}-byte limit of a record")
    try:
        record = json.loads(data)
    except (ValueError, RecursionError) as exc:  # UnicodeDecodeError is a ValueError
        raise MalformedRecord(f"{key}: not JSON ({type(exc).__name__})") from None
    if not isinstance(record, dict):
        raise MalformedRecord(f"{key}: a record is a JSON object, this is a {type(record).__name__}")
    return record


def read(store: Store, key: str, size: int) -> dict[str, Any]:
    """Fetch and decode the record at `key`, whose listed size is `size`, reading a bounded amount."""
    if size > MAX_RECORD_BYTES:
        raise MalformedRecord(f"{key}: {size} bytes, over the {MAX_RECORD_BYTES}-byte limit of a record")
    with store.open(key) as stream:
        data = stream.read(MAX_RECORD_BYTES + 1)
    return decode(data, key)


def check_header(record: dict[str, Any], key: str, fmt: str, version: int) -> None:
    """The `format` and `version` members every record starts with."""
    if record.get("format") != fmt:
        raise MalformedRecord(f"{key}: format {record.get('format')!r}, expected {fmt!r}")
    if record.get("version") != version or isinstance(record.get("version"), bool):
        raise MalformedRecord(f"{key}: {fmt} version {record.get('version')!r}; this dr reads version {version}")


def require(record: dict[str, Any], key: str, path: str, kind: type | tuple[type, ...]) -> Any:
    """The member at a dotted `path` (`rto.total_seconds`), which must be of `kind`."""
    value: Any = record
    for part in path.split("."):
        value = value.get(part, _MISSING) if isinstance(value, dict) else _MISSING
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if value is _MISSING or not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
        names = " or ".join("null" if k is type(None) else k.__name__ for k in kinds)
        found = "missing" if value is _MISSING else f"a {type(value).__name__}"
        raise MalformedRecord(f"{key}: `{path}` must be {names}, is {found}")
    return value


def require_each(items: Any, key: str, path: str, members: dict[str, type | tuple[type, ...]]) -> None:
    """Every element of the list at `path` is an object whose `members` have their kinds."""
    if not isinstance(items, list):
        raise MalformedRecord(f"{key}: `{path}` must be a list")
    for n, item in enumerate(items):
        if not isinstance(item, dict):
            raise MalformedRecord(f"{key}: `{path}[{n}]` must be an object")
        for member, kind in members.items():
            require(item, f"{key}: `{path}[{n}]`", member, kind)


_MISSING = object()
