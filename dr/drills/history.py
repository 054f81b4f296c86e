"""The drill history: one write-once record per drill under drills/, and the trend they show.

Where it sits: dr.drills.drilling writes a record at the end of every drill, whatever its
result; `dr drill --history` reads them all. Layout (docs/format.md): the key is
`drills/<drill-id>.json`, the id being `<UTC time YYYYmmddTHHMMSSZ>-<8 hex>` (the id of the
drill's restore journal, so the two link up). Records are never rewritten or deleted by dr:
the history only grows, so a bad drill cannot be quietly replaced by a good one.
"""

from __future__ import annotations

import json
import statistics
from typing import Any

from dr.repository import layout
from dr.repository.repositories import Repository
from dr.repository.stores.base import ObjectExists, ObjectMissing

FORMAT, VERSION = "dr-drill", 1


class HistoryError(Exception):
    pass


def record_key(drill_id: str) -> str:
    return f"{layout.DRILLS}{drill_id}.json"


def write_record(repo: Repository, record: dict[str, Any]) -> str:
    key = record_key(record["id"])
    data = json.dumps(record, sort_keys=True, separators=(",", ":"), default=str).encode()
    try:
        repo.store.put(key, data)
    except ObjectExists:
        raise HistoryError(f"{key} already exists; drill records are never rewritten") from None
    return key


def read_history(repo: Repository) -> list[dict[str, Any]]:
    """Every drill record, oldest first; objects that are not drill records are ignored."""
    records = []
    for key, _ in repo.store.list(layout.DRILLS):
        try:
            record = json.loads(repo.store.get(key))
        except (ObjectMissing, ValueError):
            continue
        if isinstance(record, dict) and record.get("format") == FORMAT:
            records.append(record)
    return sorted(records, key=lambda r: (r.get("started", ""), r.get("id", "")))


def _series(records: list[dict[str, Any]], value) -> dict[str, Any]:
    values = [v for v in (value(r) for r in records) if v is not None]
    if not values:
        return {}
    out = {"last": values[-1], "best": min(values), "worst": max(values), "median": statistics.median(values)}
    if len(values) > 1:
        out["previous"] = values[-2]
        out["change"] = values[-1] - values[-2]
    return out


def trend(records: list[dict[str, Any]]) -> dict[str, Any]:
    """RTO and RPO over the drills (all scenarios together), and how often they recovered."""
    results: dict[str, int] = {}
    for record in records:
        results[record.get("result", "?")] = results.get(record.get("result", "?"), 0) + 1
    return {"drills": len(records), "results": results,
            "rto_seconds": _series(records, lambda r: (r.get("rto") or {}).get("total_seconds")),
            "rpo_seconds": _series(records, lambda r: r.get("rpo_seconds"))}
