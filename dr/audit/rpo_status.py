"""RPO now (`dr status`): how much would be lost if the sources failed at this moment.

Per source: the age of its newest good snapshot, against the source's `rpo` objective, judged
exactly as the audit's staleness judges it (dr.audit.staleness), among the snapshots a restore can
read (a damaged manifest, or a catalog that a restore would refuse, is no recovery point: each such
catalog is a problem, and the source is measured from its next newest); how many runs failed since and
why; and what the newest run noticed (its exporter's findings, as the audit reports them:
dr.audit.backup_findings; a failed run's when there are some, they say why it failed). Then
whatever each source's exporter keeps outside the repository and reports itself (contract v2
rpo_report): for checkpoints, per training run and tier, the newest complete checkpoint at the
source against the newest complete DR copy, checked as a restore checks it (a damaged copy is a
breach; with read_data every byte is hashed).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from dr.audit.backup_findings import source_findings
from dr.audit.staleness import SourceAge, source_ages
from dr.contract import ExportContext
from dr.contract.registry import Registry
from dr.model import clock
from dr.model.plans import Plan, SourceSpec, TargetSpec
from dr.model.snapshots import Snapshot
from dr.repository.catalogs import unreadable_catalog
from dr.repository.repositories import IntegrityError, NotARepository, Repository
from dr.repository.targets import open_target


@dataclass
class RpoStatus:
    sources: list[dict]  # one row per source: its newest good snapshot's age against its rpo
    runs: list[dict]  # the exporters' own rows (training runs, tiers ...)
    problems: list[str] = field(default_factory=list)  # damaged objects met: the config, a newest backup's catalog

    @property
    def breached(self) -> bool:
        return any(row["breach"] for row in self.sources + self.runs)

    def to_json(self) -> dict:
        return {"sources": self.sources, "runs": self.runs, "problems": self.problems}


def rpo_status(plan: Plan, registry: Registry, target: TargetSpec, now: datetime | None = None,
               read_data: bool = False) -> RpoStatus:
    repo = open_target(plan, target)
    now = now or clock.now()
    problems: list[str] = []
    try:
        repo.open()
        snapshots, _ = repo.intact_snapshots()  # a damaged one counts for nothing: its age is not a recovery point
    except NotARepository:
        snapshots = []  # nothing backed up yet: every source with an objective is in breach
    except IntegrityError as exc:  # a damaged config: nothing in the repository can be read, so no recovery point
        snapshots, problems = [], [str(exc)]
    else:
        snapshots, problems = restorable(repo, plan, snapshots, now)
    return RpoStatus(source_rows(plan, snapshots, now),
                     [row for source in plan.spec.sources for row in _exporter_rows(plan, registry, source, read_data)],
                     problems)


def restorable(repo: Repository, plan: Plan, snapshots: list[Snapshot], now: datetime
               ) -> tuple[list[Snapshot], list[str]]:
    """`snapshots` without those whose catalog a restore would refuse, judged for each source's newest
    good backup (and, when that one is dropped, the next), and what was wrong with each dropped one.
    A snapshot whose catalog cannot be read restores nothing: like a damaged manifest, it is no
    recovery point, so a source is measured from its newest backup that a restore can read."""
    found: dict[str, str | None] = {}  # snapshot id -> why its catalog cannot be read (None: it can)
    while True:
        newest = {age.snapshot.id: age.snapshot for age in source_ages(plan, snapshots, now) if age.snapshot}
        for snapshot in (s for i, s in newest.items() if i not in found):
            found[snapshot.id] = unreadable_catalog(repo, snapshot.id, snapshot.catalog, snapshot.catalog_entries)
        bad = {i for i in newest if found[i]}
        if not bad:
            return snapshots, [problem for problem in found.values() if problem]
        snapshots = [s for s in snapshots if s.id not in bad]


def source_rows(plan: Plan, snapshots: list[Snapshot], now: datetime) -> list[dict]:
    """One row per source: its newest good snapshot's age against its rpo, the runs that failed
    since, and the newest run's findings."""
    return [_source_row(age) for age in source_ages(plan, snapshots, now)]


def _source_row(age: SourceAge) -> dict:
    held = age.snapshot.result_of(age.source.name) if age.snapshot else None
    newest = age.failed[-1] if age.failed else held
    return {"source": age.source.name, "snapshot": age.snapshot.id if age.snapshot else None,
            "age_seconds": age.age.total_seconds() if age.age is not None else None,
            "rpo": age.source.rpo, "breach": age.breach, "failed_runs": len(age.failed),
            "failure": age.failed[-1].failure() if age.failed else None,
            "findings": source_findings(newest) if newest is not None else []}


def _exporter_rows(plan: Plan, registry: Registry, source: SourceSpec, read_data: bool) -> list[dict]:
    context = ExportContext(source.name, plan.options[source.name], plan.base_dir, source.sensitivity)
    exporter = registry.get(source.type)(context)
    return [{"source": source.name, **row.to_json()} for row in exporter.rpo_report(source.rpo_delta, read_data)]
