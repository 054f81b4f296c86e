"""Restore journals: what a whole-plan restore did, step by step, so it can resume (docs/format.md 4.1).

Where it sits: dr.restore.restoring opens or starts a journal; dr.restore.executing appends
one record per step outcome as the step ends. The records' keys, encoding and checks are the
repository's (dr.repository.journals); this module keeps what a journal means for a restore.
Every record is written once: a key that is already taken means a second process is writing
the same journal, and this one stops.

A journal is finished when every step of its plan record has a `succeeded` step record; a
killed restore leaves an unfinished one. `dr restore` resumes the newest journal of the same
plan, target, snapshot, failed domains and purpose when it has not finished (or the one named
with --resume), skipping every step that already succeeded.
"""

from __future__ import annotations

import os
import socket
import threading
from dataclasses import dataclass, field
from typing import Any, Callable

from dr.repository import journals as journal_format
from dr.repository.journals import END, PLAN, RUN, STEP, new_restore_id
from dr.repository.layout import is_run_id
from dr.repository.records import MalformedRecord, RecordExists
from dr.repository.repositories import Repository

__all__ = ["END", "PLAN", "RUN", "STEP", "Journal", "JournalError", "JournalWriter", "journal_ids",
           "newest_unfinished", "read_journal", "start_journal"]

SUCCEEDED = "succeeded"


class JournalError(Exception):
    """The journal cannot be used: missing, of another snapshot, or written by two processes."""


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

    def __init__(self, repo: Repository, restore_id: str, next_seq: int, seal: Callable[[Any], str] | None = None):
        """seal: what step records' failed items are sealed with (names.seal_json to the plan's
        recipients); None when the plan has none, so no secret can have been restored."""
        self.repo, self.restore_id, self.seal = repo, restore_id, seal
        self._seq = next_seq
        self._lock = threading.Lock()

    def put(self, name: str, record: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            seq, self._seq = self._seq, self._seq + 1
        try:
            return journal_format.put_record(self.repo.store, self.restore_id, seq, name, record)
        except RecordExists as exc:
            raise JournalError(f"{exc}: another dr process is writing restore {self.restore_id}; "
                               "this one stops") from None


def start_journal(repo: Repository, header: dict[str, Any], restore_id: str | None = None,
                  seal: Callable[[Any], str] | None = None) -> tuple[Journal, JournalWriter]:
    restore_id = restore_id or new_restore_id()
    writer = JournalWriter(repo, restore_id, 0, seal)
    record = writer.put(PLAN, {"record": PLAN, "host": socket.gethostname(), "pid": os.getpid(), **header})
    return Journal(restore_id, record, [record]), writer


def journal_ids(repo: Repository) -> list[str]:
    """Every restore id in the repository, oldest first."""
    return journal_format.restore_ids(repo.store)


def read_journal(repo: Repository, restore_id: str) -> Journal:
    """The journal, its records checked (MalformedRecord names a record that is not one)."""
    if not is_run_id(restore_id):
        raise JournalError(f"'{restore_id}' is not a restore id (YYYYmmddTHHMMSSZ-<8 hex>)")
    found = journal_format.read_records(repo.store, restore_id)
    header = next((r for r in found if r["record"] == PLAN), None)
    if header is None:
        raise JournalError(f"no restore journal '{restore_id}' in {repo.description}")
    return Journal(restore_id, header, found)


def newest_unfinished(repo: Repository, match: dict[str, Any]) -> Journal | None:
    """The newest journal with the same identity (`match`) that has not finished."""
    for restore_id in reversed(journal_ids(repo)):
        try:
            journal = read_journal(repo, restore_id)
        except (JournalError, MalformedRecord):
            continue  # not resumable; a new restore redoes its steps, each idempotent
        if journal.matches(match):
            return None if journal.finished else journal
    return None
