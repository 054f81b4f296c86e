"""Running a backup (docs/format.md, "Write ordering").

For each target: take a shared lock, let every selected source's exporter write its artifacts
(reusing the previous snapshot's content where the exporter's change token says nothing
changed), then write the catalog and, last, the manifest. A source that fails is named in the
manifest with its error; the other sources still land. If every source failed no snapshot is
written at all.

Shared, so that backups run side by side as restic's do: every object a backup writes is
create-only and named by its content (two writers never write one key with different bytes);
only prune, which deletes, is exclusive, because a backup's blobs are unreferenced until its
manifest lands (docs/format.md section 14).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterable

from dr.backup.dependencies import DependencyLedger, RecordingSink, WatchedSink
from dr.backup.plan_exposure import PlanWatch
from dr.contract import ExportContext
from dr.contract.registry import Registry
from dr.model.artifacts import Artifact
from dr.model.failure_reports import failure_line, reason
from dr.model.plans import Plan, SourceSpec, TargetSpec
from dr.model.snapshots import Snapshot, SourceResult
from dr.repository.catalogs import read_catalog
from dr.repository.locks import Lock
from dr.repository.manifest_cache import ManifestCache
from dr.repository.repositories import IntegrityError, Repository
from dr.repository import immutability
from dr.repository.targets import open_target
from dr.repository.writing import SnapshotWriter


@dataclass
class BackupResult:
    target: str
    repository: str
    snapshot: Snapshot | None
    sources: list[SourceResult]
    warnings: list[str] = field(default_factory=list)

    @property
    def failed_sources(self) -> list[SourceResult]:
        """Sources that failed, or captured less than they should (an error-severity finding)."""
        return [s for s in self.sources if not s.good]

    def to_json(self) -> dict:
        return {"target": self.target, "repository": self.repository,
                "snapshot": self.snapshot.id if self.snapshot else None,
                "stats": self.snapshot.stats if self.snapshot else {},
                "sources": [s.to_json() for s in self.sources], "warnings": self.warnings}


def select_sources(plan: Plan, names: Iterable[str] | None) -> list[SourceSpec]:
    wanted = list(names or [])
    for name in wanted:
        plan.source(name)  # NotInPlan, naming the sources that exist
    return [s for s in plan.spec.sources if not wanted or s.name in wanted]


def targets_of(plan: Plan, sources: list[SourceSpec]) -> dict[str, list[SourceSpec]]:
    """Target name -> sources going there (a source with no `targets` goes to all)."""
    out: dict[str, list[SourceSpec]] = {}
    for target in plan.spec.targets:
        chosen = [s for s in sources if not s.targets or target.name in s.targets]
        if chosen:
            out[target.name] = chosen
    return out


def run_backup(plan: Plan, registry: Registry, source_names: Iterable[str] | None = None, *,
               lock_wait: float = 0.0, on_progress: Callable[[int], None] | None = None,
               log: Callable[[str], None] = lambda m: None) -> list[BackupResult]:
    sources = select_sources(plan, source_names)
    results = []
    for target_name, chosen in targets_of(plan, sources).items():
        results.append(_backup_target(plan, registry, plan.target(target_name), chosen,
                                      lock_wait, on_progress, log))
    return results


def _backup_target(plan: Plan, registry: Registry, target: TargetSpec, sources: list[SourceSpec],
                   lock_wait: float, on_progress, log) -> BackupResult:
    repo = open_target(plan, target)
    immutability.prepare(plan, target, repo)  # before the first write
    repo.init()
    with Lock(repo, exclusive=False, command=f"dr backup --plan {plan.name}").acquire(lock_wait) as lock:
        on_reused = (lambda digests, run: immutability.extend(repo, digests, run)) if target.immutability else None
        writer = SnapshotWriter(repo, plan.spec.encryption.recipients, on_progress=on_progress,
                                on_reused=on_reused)
        damage: list[str] = []  # damaged snapshots the parent search passed over (warnings)
        try:
            results = _run_sources(plan, registry, repo, writer, sources, log, damage)
            snapshot = writer.finish(plan.name, results) if any(r.ok for r in results) else None
        finally:
            writer.close()
    return BackupResult(target.name, repo.description, snapshot, results, lock.warnings + damage)


def _reads(registry: Registry, source: SourceSpec) -> bool:
    try:
        return bool(registry.get(source.type).reads_plan_dependencies)
    except Exception:  # a plugin that does not load fails in _run_source, with its reason
        return False


def _run_sources(plan: Plan, registry: Registry, repo: Repository, writer: SnapshotWriter,
                 sources: list[SourceSpec], log, damage: list[str]) -> list[SourceResult]:
    """Every source, in plan order but readers of plan dependencies last; results in plan order."""
    readers = [s for s in sources if _reads(registry, s)]
    everyone = [s.name for s in plan.spec.sources]
    # readers also see the dependencies of sources not exported now, from their newest snapshot
    parents = _parent_artifacts(repo, everyone if readers else [s.name for s in sources], damage)
    ledger = DependencyLedger()
    results: dict[str, SourceResult] = {}
    for source in [s for s in sources if s not in readers]:
        results[source.name] = _run_source(plan, registry, writer, source, parents.get(source.name, []), log,
                                           ledger)
    reader_names = {s.name for s in readers}
    for name in everyone:  # what did not export now counts as its newest snapshot recorded it
        if name not in reader_names and not (name in results and results[name].ok):
            ledger.record(parents.get(name, []))
    for source in readers:
        results[source.name] = _run_source(plan, registry, writer, source, parents.get(source.name, []), log,
                                           None, ledger.dependencies)
    return [results[s.name] for s in sources]


def _run_source(plan: Plan, registry: Registry, writer: SnapshotWriter, source: SourceSpec,
                parent: list[Artifact], log, ledger: DependencyLedger | None = None,
                plan_dependencies=lambda: []) -> SourceResult:
    context = ExportContext(source.name, plan.options[source.name], plan.base_dir, source.sensitivity,
                            log=lambda m: log(f"{source.name}: {m}"), plan_dependencies=plan_dependencies,
                            hosts=tuple(plan.placer.host_patterns()), rto=source.rto_delta,
                            seal_name=writer.names.name)
    sink = writer.source(source.name, source.type, parent)
    watch = None
    try:
        exporter = registry.get(source.type)(context)
        watch = PlanWatch(plan, source, exporter)  # format.md 8.1's caveat: a snapshot that holds the plan
        exporter.export(WatchedSink(RecordingSink(sink, ledger) if ledger is not None else sink, watch.seen))
    except Exception as exc:  # one source failing must not lose the others
        log(failure_line(source.name, exc))  # one line; a traceback only for a bug, with DR_DEBUG=1
        result = sink.discard(reason(exc))
    else:
        result = sink.commit()
    result.findings = context.findings + (watch.findings if watch is not None else [])
    return result


def _parent_artifacts(repo: Repository, source_names: list[str], damage: list[str]) -> dict[str, list[Artifact]]:
    """Each source's artifacts in the newest intact snapshot holding it: the base for reuse. The
    manifests come from the local cache where it holds them (dr.repository.manifest_cache). A
    damaged snapshot is passed over and said in `damage`: one damaged manifest or catalog must
    not stop every later backup (the RPO would grow while nothing is written)."""
    snapshots, damaged = repo.intact_snapshots(ManifestCache.default(repo.config.get("id", "")))
    damage.extend(_passed_over(problem) for problem in damaged.values())
    parents: dict[str, list[Artifact]] = {}
    loaded: dict[str, list[Artifact] | None] = {}
    for name in source_names:
        for snapshot in reversed([s for s in snapshots if name in s.source_names()]):
            if snapshot.id not in loaded:
                loaded[snapshot.id] = _catalog(repo, snapshot, damage)
            if loaded[snapshot.id] is not None:
                parents[name] = [a for a in loaded[snapshot.id] if a.source == name]
                break
    return parents


def _catalog(repo: Repository, snapshot: Snapshot, damage: list[str]) -> list[Artifact] | None:
    try:
        return list(read_catalog(repo, snapshot.catalog))
    except IntegrityError as exc:
        damage.append(_passed_over(f"snapshot {snapshot.id}: {exc}"))
        return None


def _passed_over(problem: str) -> str:
    return (f"{problem}; this backup read its parent from the newest intact snapshot instead (dr verify lists "
            "every damaged object; runbooks/damaged-snapshot.md says what to do)")
