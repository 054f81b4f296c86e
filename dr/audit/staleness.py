"""Staleness: the newest snapshot holding each source, against the source's RPO.

A source counts as held by a snapshot only if it succeeded there (a failed source is named in
the manifest but has no artifacts). No snapshot at all means nothing to restore: a blocker.
Older than the RPO means a restore loses more than the plan promises: a warning. The same in
every scenario, so these findings carry no scenario. `dr status` reports the same ages
(source_ages, via dr.audit.rpo_status), so the audit and status never disagree on what is stale.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from dr.audit.findings import BLOCKER, WARNING, Finding
from dr.model.durations import format_duration
from dr.model.plans import Plan, SourceSpec, TargetSpec
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


@dataclass(frozen=True)
class SourceAge:
    """How old the newest snapshot holding a source is, against the source's RPO."""

    source: SourceSpec
    snapshot: Snapshot | None  # None: no snapshot holds it
    age: timedelta | None

    @property
    def breach(self) -> bool:
        """Older than the RPO, or never backed up while an RPO is set."""
        rpo = self.source.rpo_delta
        return rpo is not None and (self.age is None or self.age > rpo)


def source_ages(plan: Plan, snapshots: list[Snapshot], now: datetime,
                target: TargetSpec | None = None) -> list[SourceAge]:
    """One per source of the plan (with a target: only the sources backed up to it)."""
    newest = newest_by_source(snapshots)
    ages = []
    for source in plan.spec.sources:
        if target is not None and not _goes_to(source.targets, target):
            continue  # this source is backed up to other targets only
        snap = newest.get(source.name)
        ages.append(SourceAge(source, snap, now - snap.time if snap else None))
    return ages


def stale_findings(plan: Plan, target: TargetSpec, snapshots: list[Snapshot], now: datetime) -> list[Finding]:
    findings = []
    for entry in source_ages(plan, snapshots, now, target):
        source, snap = entry.source, entry.snapshot
        if snap is None:
            findings.append(Finding(
                "stale-backup", BLOCKER,
                f"no snapshot in target {target.name} holds source {source.name}: there is nothing "
                f"to restore it from", kind="source", reference=source.name, sources=[source.name]))
        elif entry.breach:
            findings.append(Finding(
                "stale-backup", WARNING,
                f"the newest snapshot holding source {source.name} ({snap.short_id}, "
                f"{snap.time:%Y-%m-%d %H:%M}Z) is {format_duration(entry.age)} old; its RPO is "
                f"{format_duration(source.rpo_delta)}", kind="source", reference=source.name,
                sources=[source.name]))
    return findings
