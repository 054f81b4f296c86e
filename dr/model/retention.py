"""Retention: which snapshots a policy keeps (keep-last / hourly / daily / weekly / monthly / yearly).

As restic's forget: for each bucket kind, walk snapshots newest first and keep the newest
snapshot of each of the last N distinct buckets. A snapshot kept by any rule is kept. An empty
policy keeps everything: pruning never deletes by default. Only good runs count as a source's
backups (dr.model.snapshots, SourceResult.good), and a source's newest good one is always kept.
"""

from __future__ import annotations

from datetime import datetime
from typing import Callable, Sequence

BUCKETS: dict[str, Callable[[datetime], tuple]] = {
    "keep_hourly": lambda t: (t.year, t.month, t.day, t.hour),
    "keep_daily": lambda t: (t.year, t.month, t.day),
    "keep_weekly": lambda t: t.isocalendar()[:2],
    "keep_monthly": lambda t: (t.year, t.month),
    "keep_yearly": lambda t: (t.year,),
}


def select_kept(times: Sequence[tuple[str, datetime]], policy: dict[str, int | None]) -> dict[str, list[str]]:
    """Map each kept id to the rules that keep it. `times` is (id, time) pairs."""
    newest_first = sorted(times, key=lambda item: item[1], reverse=True)
    if all(v is None for v in policy.values()):
        return {sid: ["no retention policy: keep all"] for sid, _ in newest_first}
    kept: dict[str, list[str]] = {}
    last = policy.get("keep_last") or 0
    for sid, _ in newest_first[:last]:
        kept.setdefault(sid, []).append("keep_last")
    for rule, bucket_of in BUCKETS.items():
        limit = policy.get(rule) or 0
        seen: set[tuple] = set()
        for sid, when in newest_first:
            bucket = bucket_of(when)
            if len(seen) >= limit:
                break
            if bucket not in seen:
                seen.add(bucket)
                kept.setdefault(sid, []).append(rule)
    return kept


def snapshots_to_forget(snapshots, sources) -> list[str]:
    """Ids of snapshots no source's retention keeps.

    `snapshots`: Snapshot objects; `sources`: (source name, retention policy dict) pairs. Per
    source the policy chooses among its good snapshots, so failed runs never push a good backup
    out, and (as before) among the snapshots holding any of its artifacts, so a failed run that
    captured part of the source is not lost to its good ones. A snapshot is kept if any source
    keeps it. The newest good snapshot of every source is kept whatever the policy says, and so
    is each plan source's newest run when it failed (the record of why there is no newer good
    backup, which `dr status` reports). A snapshot listing none of the plan's sources (a source
    since removed from the plan) is kept: dr never deletes what it cannot judge.
    """
    kept = _newest_good_of_every_source(snapshots)
    names = {name for name, _ in sources}
    for name, policy in sources:
        if all(v is None for v in policy.values()):  # no policy: every run of the source stays
            kept |= {s.id for s in snapshots if s.result_of(name) is not None}
            continue
        kept |= _newest_run_if_failed(snapshots, name)
        good = [(s.id, s.time) for s in snapshots if name in s.good_source_names()]
        holding = [(s.id, s.time) for s in snapshots if name in s.source_names()]
        kept |= set(select_kept(good, policy)) | set(select_kept(holding, policy))
    return [s.id for s in snapshots
            if s.id not in kept and any(r.name in names for r in s.sources)]


def _newest_good_of_every_source(snapshots) -> set[str]:
    newest: dict[str, tuple] = {}
    for snap in snapshots:
        for name in snap.good_source_names():
            if name not in newest or snap.time > newest[name][1]:
                newest[name] = (snap.id, snap.time)
    return {sid for sid, _ in newest.values()}


def _newest_run_if_failed(snapshots, source: str) -> set[str]:
    runs = [s for s in snapshots if s.result_of(source) is not None]
    newest = max(runs, key=lambda s: s.time) if runs else None
    return {newest.id} if newest is not None and not newest.result_of(source).good else set()
