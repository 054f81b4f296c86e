"""Restore journals: what a whole-plan restore did, step by step, so it can resume (docs/format.md).

Where it sits: dr.restore.restoring opens or starts a journal; dr.restore.executing appends
one record per step outcome as the step ends. Layout, in the restore's target repository:

    journals/<restore-id>/<seq>-<name>.json

<restore-id> is `<UTC time YYYYmmddTHHMMSSZ>-<8 hex>` (sorts by start time); <seq> is six
digits, 000000 for the `plan` record, then one more for every record after it; <name> is
`plan`, `run`, `end` or the step's (source's) name. The record's `record` field says which
kind it is; readers use that, never the name. Every object is written once with the store's
write-once put and never rewritten or deleted by dr: an object that already exists means a
second process is writing the same journal, and this one stops.

A journal is finished when every step of its plan record has a `succeeded` step record; a
killed restore leaves an unfinished one. `dr restore` resumes the newest journal of the same
plan, target, snapshot, failed domains and purpose when it has not finished (or the one named
with --resume), skipping every step that already succeeded.
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import threading
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from dr.repository import layout
from dr.repository.repositories import Repository
from dr.repository.stores.base import ObjectExists, ObjectMissing

FORMAT, VERSION = "dr-restore-journal", 1
PLAN, RUN, STEP, END = "plan", "run", "step", "end"
SUCCEEDED = "succeeded"


class JournalError(Exception):
    """The journal cannot be used: missing, of another snapshot, or written by two processes."""


def utc(moment: datetime | None = None) -> str:
    return (moment or datetime.now(timezone.utc)).astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def new_restore_id(now: datetime | None = None) -> str:
    now = (now or datetime.now(timezone.utc)).astimezone(timezone.utc)
    return f"{now:%Y%m%dT%H%M%SZ}-{secrets.token_hex(4)}"


def record_key(restore_id: str, seq: int, name: str) -> str:
    return f"{layout.JOURNALS}{restore_id}/{seq:06d}-{name}.json"


def _encode(record: dict[str, Any]) -> bytes:
    return json.dumps(record, sort_keys=True, separators=(",", ":"), default=str).encode()


@dataclass
class Journal:
    restore_id: str
    header: dict[str, Any]
    records: list[dict[str, Any]] = field(default_factory=list)  # every record, by seq

    @property
    def next_seq(self) -> int:
        return max((r["seq"] for r in self.records), default=0) + 1

    @property
    def runs(self) -> int:
        return sum(1 for r in self.records if r.get("record") == RUN)

    def step_names(self) -> list[str]:
        return [s["name"] for s in self.header.get("steps", [])]

    def latest(self) -> dict[str, dict[str, Any]]:
        """Each step's newest record."""
        out: dict[str, dict[str, Any]] = {}
        for record in self.records:
            if record.get("record") == STEP:
                out[record["step"]] = record
        return out

    def succeeded(self) -> set[str]:
        return {name for name, r in self.latest().items() if r.get("status") == SUCCEEDED}

    @property
    def finished(self) -> bool:
        return set(self.step_names()) <= self.succeeded()

    def matches(self, match: dict[str, Any]) -> bool:
        return all(self.header.get(k) == v for k, v in match.items())


class JournalWriter:
    """Appends records to one journal; safe to call from the threads of one level."""

    def __init__(self, repo: Repository, restore_id: str, next_seq: int):
        self.repo, self.restore_id = repo, restore_id
        self._seq = next_seq
        self._lock = threading.Lock()

    def put(self, name: str, record: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            seq, self._seq = self._seq, self._seq + 1
        record = {"format": FORMAT, "version": VERSION, "restore": self.restore_id, "seq": seq,
                  "time": utc(), **record}
        key = record_key(self.restore_id, seq, name)
        try:
            self.repo.store.put(key, _encode(record))
        except ObjectExists:
            raise JournalError(f"{key} already exists: another dr process is writing restore "
                               f"{self.restore_id}; this one stops") from None
        return record


def start_journal(repo: Repository, header: dict[str, Any], restore_id: str | None = None) -> tuple[Journal, JournalWriter]:
    restore_id = restore_id or new_restore_id()
    writer = JournalWriter(repo, restore_id, 0)
    record = writer.put(PLAN, {"record": PLAN, "host": socket.gethostname(), "pid": os.getpid(), **header})
    return Journal(restore_id, record, [record]), writer


def journal_ids(repo: Repository) -> list[str]:
    """Every restore id in the repository, oldest first."""
    ids = {key[len(layout.JOURNALS):].split("/", 1)[0] for key, _ in repo.store.list(layout.JOURNALS)}
    return sorted(i for i in ids if i)


def read_journal(repo: Repository, restore_id: str) -> Journal:
    prefix = f"{layout.JOURNALS}{restore_id}/"
    records = []
    for key, _ in repo.store.list(prefix):
        try:
            record = json.loads(repo.store.get(key))
        except (ObjectMissing, ValueError):
            continue  # not a record dr wrote; readers ignore what they do not know
        if isinstance(record, dict) and record.get("format") == FORMAT and record.get("restore") == restore_id:
            records.append(record)
    records.sort(key=lambda r: r.get("seq", 0))
    header = next((r for r in records if r.get("record") == PLAN), None)
    if header is None:
        raise JournalError(f"no restore journal '{restore_id}' in {repo.description}")
    return Journal(restore_id, header, records)


def newest_unfinished(repo: Repository, match: dict[str, Any]) -> Journal | None:
    """The newest journal with the same identity (`match`) that has not finished."""
    for restore_id in reversed(journal_ids(repo)):
        try:
            journal = read_journal(repo, restore_id)
        except JournalError:
            continue
        if journal.matches(match):
            return None if journal.finished else journal
    return None
