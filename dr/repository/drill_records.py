"""Drill records: their keys, encoding and checks (docs/format.md 4.2).

Where it sits: dr.drills.drilling builds a record at the end of every drill and
dr.drills.history reads them all back for the trend; both go through this module. The key is
`drills/<drill-id>.json`, the id being `<UTC time YYYYmmddTHHMMSSZ>-<8 hex>` (the id of the
drill's restore journal, so the two link up). Records are written once and never rewritten or
deleted by dr: the history only grows, so a bad drill cannot be quietly replaced by a good one.

Reading is bounded and strict (dr.repository.records): an object at a drill record's key that
is not a valid record is refused with MalformedRecord rather than skipped, since a history that
silently drops a drill is not a history. Keys of another form under drills/ are ignored.
"""

from __future__ import annotations

from typing import Any

from dr.repository import layout, records
from dr.repository.stores.base import Store

FORMAT, VERSION = "dr-drill", 1

_NUMBER = (int, float)
# The members readers (the history, its trend and its text) rely on, with their types.
REQUIRED: dict[str, type | tuple[type, ...]] = {
    "id": str, "started": str, "finished": str, "scenario": str, "target": str, "snapshot.id": str,
    "rpo_seconds": _NUMBER, "rto.total_seconds": _NUMBER, "rto.phases": dict, "rto_estimate": dict,
    "audit": dict, "restore.steps": list, "verify.steps": list, "result": str, "summary": str,
}


def write(store: Store, record: dict[str, Any]) -> str:
    """Write a drill record once; return its key. RecordExists when the key is taken."""
    key = layout.drill_record_key(record["id"])
    records.put(store, key, record, check)
    return key


def read_all(store: Store) -> list[dict[str, Any]]:
    """Every drill record, checked, oldest first."""
    found = []
    for key, size in store.list(layout.DRILLS):
        if layout.drill_id_of_key(key) is None:
            continue  # not a drill record's key: readers ignore what they do not know
        record = records.read(store, key, size)
        check(record, key)
        found.append(record)
    return sorted(found, key=lambda r: (r["started"], r["id"]))


def check(record: dict[str, Any], key: str) -> None:
    """MalformedRecord unless `record` is a drill record that may stand at `key`."""
    records.check_header(record, key, FORMAT, VERSION)
    for path, kind in REQUIRED.items():
        records.require(record, key, path, kind)
    if record["id"] != layout.drill_id_of_key(key):
        raise records.MalformedRecord(f"{key}: `id` {record['id']!r} is not the key's")
    records.require_each(record["restore"]["steps"], key, "restore.steps",
                         {"step": str, "status": str, "reason": str, "seconds": _NUMBER})
    records.require_each(record["verify"]["steps"], key, "verify.steps", {"step": str, "verified": bool})
