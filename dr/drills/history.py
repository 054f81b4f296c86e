"""The drill history: one write-once record per drill under drills/, and the trend they show.

Where it sits: dr.drills.drilling writes a record at the end of every drill, whatever its
result; `dr drill --history` reads them all. The records' keys, encoding and checks are the
repository's (dr.repository.drill_records, docs/format.md 4.2); this module keeps what the
history means: records are never rewritten, and the trend over them.
"""

from __future__ import annotations

import statistics
from typing import Any

from dr.repository import drill_records
from dr.repository.records import RecordExists
from dr.repository.repositories import Repository


class HistoryError(Exception):
    pass


def write_record(repo: Repository, record: dict[str, Any]) -> str:
    try:
        return drill_records.write(repo.store, record)
    except RecordExists as exc:
        raise HistoryError(f"{exc}; drill records are never rewritten") from None


def read_history(repo: Repository) -> list[dict[str, Any]]:
    """Every drill record, oldest first (MalformedRecord names an object that is not one)."""
    return drill_records.read_all(repo.store)

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
    """RTO and RPO over the restore drills (all scenarios together), and how often they recovered.
    Training drills (`kind: training`) measure another RTO, the training's: they are counted
    apart, in `training_drills`, and left out of the series."""
    trainings = [r for r in records if r.get("kind") == "training"]
    records = [r for r in records if r.get("kind") != "training"]
    results: dict[str, int] = {}
    for record in records:
        results[record.get("result", "?")] = results.get(record.get("result", "?"), 0) + 1
    return {"drills": len(records), "results": results, "training_drills": len(trainings),
            "rto_seconds": _series(records, lambda r: (r.get("rto") or {}).get("total_seconds")),
            "rpo_seconds": _series(records, lambda r: r.get("rpo_seconds"))}
