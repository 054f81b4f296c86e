"""Staleness: the newest snapshot holding each source, against the source's RPO.

A source counts as held by a snapshot only if it succeeded there (a failed source is named in
the manifest but has no artifacts). No snapshot at all means nothing to restore: a blocker.
Older than the RPO means a restore loses more than the plan promises: a warning. The same in
every scenario, so these findings carry no scenario.
"""

from __future__ import annotations

from datetime import datetime

from dr.audit.findings import BLOCKER, WARNING, Finding
from dr.model.durations import format_duration
from dr.model.plans import Plan, TargetSpec
from dr.model.snapshots import Snapshot


def newest_by_source(snapshots: list[Snapshot]) -> dict[str, Snapshot]:
    newest: dict[str, Snapshot] = {}
    for snap in snapshots:
        for name in snap.source_names():
            if name not in newest or snap.time > newest[name].time:
                newest[name] = snap
    return newest


def _goes_to(source_targets: list[str], target: TargetSpec) -> bool:
    return not source_targets or target.name in source_targets


def stale_findings(plan: Plan, target: TargetSpec, snapshots: list[Snapshot], now: datetime) -> list[Finding]:
    newest = newest_by_source(snapshots)
    findings = []
    for source in plan.spec.sources:
        if not _goes_to(source.targets, target):
            continue  # this source is backed up to other targets only
        snap = newest.get(source.name)
        if snap is None:
            findings.append(Finding(
                "stale-backup", BLOCKER,
                f"no snapshot in target {target.name} holds source {source.name}: there is nothing "
                f"to restore it from", kind="source", reference=source.name, sources=[source.name]))
            continue
        rpo = source.rpo_delta
        age = now - snap.time
        if rpo is not None and age > rpo:
            findings.append(Finding(
                "stale-backup", WARNING,
                f"the newest snapshot holding source {source.name} ({snap.short_id}, "
                f"{snap.time:%Y-%m-%d %H:%M}Z) is {format_duration(age)} old; its RPO is "
                f"{format_duration(rpo)}", kind="source", reference=source.name,
                sources=[source.name]))
    return findings
