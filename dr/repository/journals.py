"""Restore journal records: their keys, encoding and checks (docs/format.md 4.1).

Where it sits: dr.restore.journals keeps a journal (what ran, what to resume) and calls this
module for every object it writes or reads. Layout, in the restore's target repository:

    journals/<restore-id>/<seq>-<name>.json

<restore-id> is `<UTC time YYYYmmddTHHMMSSZ>-<8 hex>` (sorts by start time); <seq> is six
digits, 000000 for the `plan` record, then one more for every record after it; <name> is
`plan`, `run`, `end` or the step's (source's) name. The record's `record` field says which
kind it is; readers use that, never the name. Every object is written once with the store's
write-once put and never rewritten or deleted by dr.

Reading is bounded and strict (dr.repository.records): an object at a record's key that is
not a record of this journal (not JSON, another format or version, a `restore` or `seq` that
disagrees with its key, a member the readers rely on missing or of the wrong type) is refused
with MalformedRecord. Keys of another form under journals/ are not records and are ignored.
"""

from __future__ import annotations

import secrets
from datetime import datetime, timezone
from typing import Any

from dr.repository import layout, records
from dr.repository.stores.base import Store

FORMAT, VERSION = "dr-restore-journal", 1
PLAN, RUN, STEP, END = "plan", "run", "step", "end"

# What each kind of record must hold for a reader to resume from it; the rest is for people.
REQUIRED: dict[str, dict[str, type | tuple[type, ...]]] = {
    PLAN: {"snapshot": str, "steps": list},
    RUN: {"run": int},
    STEP: {"run": int, "step": str, "status": str},
    END: {"run": int, "finished": bool},
}


def new_restore_id(now: datetime | None = None) -> str:
    now = (now or datetime.now(timezone.utc)).astimezone(timezone.utc)
    return f"{now:%Y%m%dT%H%M%SZ}-{secrets.token_hex(4)}"


def put_record(store: Store, restore_id: str, seq: int, name: str, fields: dict[str, Any]) -> dict[str, Any]:
    """Write record `seq` of a journal, once; return it. RecordExists when its key is taken."""
    record = {"format": FORMAT, "version": VERSION, "restore": restore_id, "seq": seq, "time": records.utc(),
              **fields}
    key = layout.journal_record_key(restore_id, seq, name)
    records.put(store, key, record, check)
    return record


def restore_ids(store: Store) -> list[str]:
    """Every restore id with an object under journals/, oldest first."""
    ids = {layout.restore_id_of_journal_key(key) for key, _ in store.list(layout.JOURNALS)}
    return sorted(i for i in ids if i)


def read_records(store: Store, restore_id: str) -> list[dict[str, Any]]:
    """Every record of a journal, checked, ordered by `seq` (empty when there is no journal)."""
    found = []
    for key, size in store.list(layout.journal_prefix(restore_id)):
        seq = layout.seq_of_journal_record_key(key)
        if seq is None:
            continue  # not a record's key: readers ignore what they do not know
        record = records.read(store, key, size)
        check(record, key)
        found.append(record)
    return sorted(found, key=lambda r: r["seq"])


def check(record: dict[str, Any], key: str) -> None:
    """MalformedRecord unless `record` is a journal record that may stand at `key`."""
    records.check_header(record, key, FORMAT, VERSION)
    if record.get("restore") != layout.restore_id_of_journal_key(key):
        raise records.MalformedRecord(f"{key}: `restore` {record.get('restore')!r} is not the journal's id")
    if records.require(record, key, "seq", int) != layout.seq_of_journal_record_key(key):
        raise records.MalformedRecord(f"{key}: `seq` {record['seq']} is not the key's")
    records.require(record, key, "time", str)
    kind = records.require(record, key, "record", str)
    if kind not in REQUIRED:
        raise records.MalformedRecord(f"{key}: `record` {kind!r} is none of {', '.join(REQUIRED)}")
    for member, member_kind in REQUIRED[kind].items():
        records.require(record, key, member, member_kind)
    if kind == PLAN:
        records.require_each(record["steps"], key, "steps", {"name": str})
