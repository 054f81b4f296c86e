"""Running an audit: read one snapshot's catalog, then judge it in every scenario.

The flow: pick the snapshot (latest by default) in the audited target, stream its catalog
once into a dependency index (dr.audit.gathering; with latest, a source whose run failed there
is read from its newest good backup instead: _audited_records), place every distinct reference once
(cached), then for each scenario judge the essentials (dr.audit.essentials) and the
dependencies (dr.audit.dependency_findings), both through the verdict engine (dr.model.recovery). Staleness and placement gaps hold in every scenario and are
reported once, as are the exporters' own findings kept in the snapshot's manifest
(dr.audit.backup_findings). With live (dr audit --live), coverage too (dr.audit.coverage). Nothing is written to the repository: the audit needs read access only, and
never the private key (catalogs are not encrypted).
"""

from __future__ import annotations

from datetime import datetime
from itertools import chain
from typing import Any, Callable, Iterable, Iterator, Mapping

from dr.audit.alternatives import AnyOfNeeds
from dr.audit.audits import AuditReport, Readiness, ScenarioResult, SnapshotInfo
from dr.audit.backup_findings import READINESS, backup_findings, readiness_counts, readiness_findings
from dr.audit.credentials import circular_findings
from dr.audit.coverage import ExporterLookup, HeldIdentities, coverage_findings
from dr.audit.declared import declared
from dr.audit.essentials import judge_scenario, unknown_findings
from dr.audit.failed_copies import FailedRunCopies
from dr.audit.spot_saves import spot_save_findings
from dr.audit.findings import WARNING, Finding
from dr.audit.plan_remaps import PlanRemaps
from dr.audit.gathering import DependencyIndex, gather
from dr.audit.dependency_findings import DependencyJudge, count_verdicts
from dr.audit.revealing import Revealer
from dr.audit.staleness import stale_findings
from dr.contract import Exporter
from dr.model.locations import canonical_image
from dr.model.plans import Plan, TargetSpec
from dr.model.recovery import Copy, Placements, Scenario, essentials
from dr.model import clock
from dr.model.snapshots import Snapshot, newest_good
from dr.repository import layout, names
from dr.repository.catalogs import read_catalog_records
from dr.repository.repositories import Repository


def choose_audited_target(plan: Plan, scenarios: list[Scenario], name: str | None = None) -> TargetSpec:
    """The named target, else the first that survives every scenario, else the most surviving."""
    if name:
        return plan.target(name)
    for target in plan.spec.targets:
        if not any(s.loses(target.domain) for s in scenarios):
            return target
    return max(plan.spec.targets, key=lambda t: sum(not s.loses(t.domain) for s in scenarios))


def run_audit(plan: Plan, repo: Repository, target: TargetSpec, scenarios: list[Scenario], *,
              snapshot_ref: str = "latest", strict: bool = False,
              now: datetime | None = None, live: ExporterLookup | None = None,
              readiness: bool = False, exporters: Mapping[str, Exporter] | None = None,
              revealer: Revealer | None = None) -> AuditReport:
    """live: the exporter registry, to compare what the sources hold now with the snapshot
    (dr.audit.coverage); None (the default) runs no exporter at all. readiness: also list the
    readiness scenario (the exporters' go-live findings, dr.audit.backup_findings). exporters:
    source -> the exporter built from the plan (as restore planning builds them), asked for its
    any-of needs (contract v2 restore_needs, dr.audit.alternatives) and the kinds it checks at
    backup time (checked_kinds); None: every dependency is judged on its own. revealer: learns
    the names of the sealed lines it can open (dr audit --identity, dr.audit.revealing); the
    verdicts are the same without it."""
    now = now or clock.now()  # the clock snapshot times are stamped with, as dr status measures
    snapshots = repo.snapshots()
    snapshot = _select(repo, snapshots, snapshot_ref)
    held = HeldIdentities(name_key=names.plan_name_key(plan.spec.encryption.recipients))
    any_of = AnyOfNeeds(exporters)
    name_key = names.plan_name_key(plan.spec.encryption.recipients)
    if snapshot:
        held_back: list[dict[str, Any]] = []  # the failed runs' lines, judged from older good backups
        records = _audited_records(repo, snapshots, snapshot, snapshot_ref, held_back)
        records = any_of.record(held.record(records) if live is not None else records)
        records = revealer.record(records) if revealer is not None else records
        index = gather(records, plan.spec.dr_image, name_key)
    else:
        index = DependencyIndex()
    placements = Placements(plan)
    # the codes the exporters of these sources declare, before any finding names one
    knowledge = declared(types={s.type for s in plan.spec.sources}
                         | {r.exporter for r in (snapshot.sources if snapshot else [])})
    judge = DependencyJudge(plan, index, placements, lambda copy: _intact(repo, copy), strict,
                            any_of.resolve(index), {name: e.checked_kinds for name, e in (exporters or {}).items()},
                            knowledge.code_for, PlanRemaps(plan, exporters or {}))
    needs_key = bool(plan.spec.encryption.recipients) or index.encrypted > 0
    items = essentials(plan, placements, needs_key)
    circular, replaced = circular_findings(items, target.name, index)
    findings = (circular + knowledge.findings() + judge.unknown_findings()
                + unknown_findings([i for i in items if i not in replaced], placements, strict)
                + stale_findings(plan, target, snapshots, now))
    findings += [Finding("needs-unknown", WARNING, f"source {source}: its exporter's restore_needs raised {error}; "
                         "its dependencies are judged one by one", kind="source", reference=source, sources=[source])
                 for source, error in any_of.problems]
    recorded = readiness_counts(snapshot)
    if snapshot is not None:
        findings += backup_findings(snapshot, strict)
        joined = spot_save_findings(plan, repo, snapshot, exporters, strict)
        for finding in joined:
            recorded[finding.kind] = recorded.get(finding.kind, 0) + 1
        if readiness:
            findings += readiness_findings(snapshot, strict) + joined
    if live is not None and snapshot is not None:
        findings += coverage_findings(plan, target, held, snapshot.source_names(), live, strict)
    results = []
    for scenario in scenarios:
        states = judge_scenario(items, scenario, target.name, placements)
        judged = judge.judge(scenario, states.copies_survive)
        findings += _count_once(states.findings + judge.scenario_findings(scenario, judged), plan.spec.dr_image)
        results.append(ScenarioResult(scenario, count_verdicts(judged), judged, states))
    order = {s.name: i + 1 for i, s in enumerate(scenarios)}
    order[READINESS] = len(scenarios) + 1  # beside the failure scenarios, after them
    if snapshot is not None and held_back:
        FailedRunCopies(snapshot, gather(held_back, plan.spec.dr_image, name_key)).annotate(findings, index)
    findings.sort(key=lambda f: (order.get(f.scenario or "", 0), *f.sort_key()))
    return AuditReport(plan.name, plan.path, now, strict, target.name,
                       _info(snapshot, target, repo, index), results, findings, plan.domains,
                       Readiness(readiness, dict(sorted(recorded.items()))))


def _count_once(findings: list[Finding], dr_image: str | None) -> list[Finding]:
    """dr's own image, when a workload of the snapshot runs it too (dr's backup CronJob), is one
    problem: the dr-image finding stays and names those workloads; the image finding goes."""
    mine = canonical_image(dr_image) if dr_image else None
    essential = next((f for f in findings if f.code == "dr-image-in-failed-domain"), None)
    if essential is None or mine is None:
        return findings
    same = [f for f in findings if f.code == "image-in-failed-domain" and canonical_image(f.reference) == mine]
    for finding in same:
        essential.artifacts_affected += finding.artifacts_affected
        essential.examples += [e for e in finding.examples if e not in essential.examples]
        essential.sources = sorted(set(essential.sources) | set(finding.sources))
    return [f for f in findings if not any(f is s for s in same)]


def _select(repo: Repository, snapshots: list[Snapshot], ref: str) -> Snapshot | None:
    if ref == "latest":
        return snapshots[-1] if snapshots else None  # none: every source is reported stale
    return repo.find_snapshot(ref)


def _audited_records(repo: Repository, snapshots: list[Snapshot], snapshot: Snapshot,
                     ref: str, held_back: list[dict[str, Any]]) -> Iterable[dict[str, Any]]:
    """The catalog lines judged: the snapshot's; with `latest`, a source whose run failed there is
    judged from its newest good backup instead (docs/format.md section 9), the backup that
    `dr restore --source` would restore, its lines replacing what the failed run captured."""
    lines = read_catalog_records(repo, snapshot.catalog)
    older: dict[str, tuple[Snapshot, set[str]]] = {}
    for result in snapshot.sources if ref == "latest" else []:
        good = None if result.good else newest_good(snapshots, result.name)
        if good is not None:
            older.setdefault(good.id, (good, set()))[1].add(result.name)
    if not older:
        return lines
    moved = set().union(*(names for _, names in older.values()))
    return chain(_held_back(lines, moved, held_back),
                 *(_lines_of(read_catalog_records(repo, good.catalog), names.__contains__)
                   for good, names in older.values()))


def _held_back(lines: Iterable[dict[str, Any]], moved: set[str],
               held_back: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """The lines of the sources not moved; the moved sources' lines go to held_back (the failed
    runs' copies, dr.audit.failed_copies): one read of the catalog for both."""
    for line in lines:
        if line.get("source") in moved:
            held_back.append(line)
        else:
            yield line


def _lines_of(lines: Iterable[dict[str, Any]], wanted: Callable[[Any], bool]) -> Iterator[dict[str, Any]]:
    return (line for line in lines if wanted(line.get("source")))


def _intact(repo: Repository, copy: Copy) -> bool:
    """A copy counts only if every blob of it is still stored (content checks: dr verify)."""
    return all(repo.store.exists(layout.blob_key(digest)) for digest in copy.chunks)


def _info(snapshot: Snapshot | None, target: TargetSpec, repo: Repository,
          index: DependencyIndex) -> SnapshotInfo | None:
    if snapshot is None:
        return None
    return SnapshotInfo(snapshot.id, snapshot.time, target.name, repo.description, index.artifacts,
                        index.references, len(index.uses), snapshot.source_names())

