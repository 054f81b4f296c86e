"""Staleness: the newest good snapshot of each source, against the source's RPO.

Only a good run counts (dr.model.snapshots, SourceResult.good): a source that failed, or whose
exporter reported an error-level finding (a missing path, an unreachable remote), is named in
the manifest but is no recovery point. The failed runs since the newest good one are reported
with it. No good snapshot at all means nothing to restore: a blocker.
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
from dr.model.snapshots import Snapshot, SourceResult, failed_runs, failed_since


def newest_by_source(snapshots: list[Snapshot]) -> dict[str, Snapshot]:
    """Each source's newest good snapshot."""
    newest: dict[str, Snapshot] = {}
    for snap in snapshots:
        for name in snap.good_source_names():
            if name not in newest or snap.time > newest[name].time:
                newest[name] = snap
    return newest


def _goes_to(source_targets: list[str], target: TargetSpec) -> bool:
    return not source_targets or target.name in source_targets


@dataclass(frozen=True)
class SourceAge:
    """How old the newest good snapshot of a source is, against the source's RPO."""

    source: SourceSpec
    snapshot: Snapshot | None  # None: no snapshot is a good backup of it
    age: timedelta | None
    failed: tuple[SourceResult, ...] = ()  # its failed runs since, oldest first

    def failed_runs(self) -> str:
        return failed_runs(len(self.failed), self.failed[-1].failure() if self.failed else "",
                           self.snapshot is not None)

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
        failed = tuple(failed_since(snapshots, source.name, snap))
        ages.append(SourceAge(source, snap, now - snap.time if snap else None, failed))
    return ages


def stale_findings(plan: Plan, target: TargetSpec, snapshots: list[Snapshot], now: datetime) -> list[Finding]:
    findings = []
    for entry in source_ages(plan, snapshots, now, target):
        source, snap = entry.source, entry.snapshot
        if snap is None:
            findings.append(Finding(
                "stale-backup", BLOCKER,
                f"no snapshot in target {target.name} is a good backup of source {source.name}: there "
                f"is nothing to restore it from{entry.failed_runs()}", kind="source",
                reference=source.name, sources=[source.name]))
        elif entry.breach:
            findings.append(Finding(
                "stale-backup", WARNING,
                f"the newest good snapshot of source {source.name} ({snap.short_id}, "
                f"{snap.time:%Y-%m-%d %H:%M}Z) is {format_duration(entry.age)} old; its RPO is "
                f"{format_duration(source.rpo_delta)}{entry.failed_runs()}", kind="source",
                reference=source.name, sources=[source.name]))
    return findings
