"""A whole-plan restore: read the snapshot, plan every source together, execute with a journal.

Where it sits: `dr restore` without --source, and `dr drill`, call prepare() (read-only: the
plan, its order, its verdicts and the RTO estimate) and then run_plan_restore() (the journal
and the execution). The caller holds a shared lock on the repository across both, so a prune
cannot remove what the restore is reading.

Which target: --target, else the first target of the plan that the scenario does not lose,
else the plan's primary one (the plan then says the target is lost: a blocker).
Which journal (dr.restore.journals): --resume ID; else, unless --new, the newest journal of
the same plan, target, snapshot, failed domains and purpose (restore or drill) if it has not
finished: its succeeded steps are skipped, wherever they went, and the other steps run with
this run's destinations and remaps (each run record keeps them); else a new one.
"""

from __future__ import annotations

import socket
from dataclasses import dataclass, field
from typing import Any, Callable

import pyrage

from dr.contract.registry import Registry
from dr.model.artifacts import Artifact
from dr.model.plans import Plan, TargetSpec
from dr.model.recovery import is_lost, lost_domains
from dr.model.snapshots import Snapshot
from dr.planner.estimating import RtoEstimate, estimate
from dr.planner.planning import RestorePlan, plan_restore, planning_exporters
from dr.planner.remaps import unknown_sources
from dr.repository import encryption, names
from dr.repository.catalogs import read_catalog
from dr.repository.reading import ArtifactReader
from dr.repository.repositories import Repository
from dr.restore.executing import Event, StepRunner, execute
from dr.restore.journals import (END, RUN, Journal, JournalError, JournalWriter, newest_unfinished, read_journal,
                                 start_journal)
from dr.restore.results import ResultStatus, StepResult


class RestoreUsageError(ValueError):
    """What the operator asked for cannot be planned (a bad --to, a remap naming no source ...)."""


def choose_restore_target(plan: Plan, failed: list[str], name: str | None = None) -> TargetSpec:
    if name:
        return plan.target(name)
    lost = lost_domains(plan.domains, failed)
    return next((t for t in plan.spec.targets if not is_lost(t.domain, lost)), plan.primary_target())


@dataclass
class Prepared:
    plan: Plan
    repo: Repository
    target: TargetSpec
    snapshot: Snapshot
    artifacts: list[Artifact]
    restore_plan: RestorePlan
    estimate: RtoEstimate

    def to_json(self) -> dict[str, Any]:
        return {**self.restore_plan.to_json(), "rto_estimate": self.estimate.to_json()}


def prepare(plan: Plan, repo: Repository, target: TargetSpec, registry: Registry, *,
            snapshot_ref: str = "latest", failed: list[str] = (), destinations: dict[str, str] | None = None,
            force: bool = False, identities: list[pyrage.x25519.Identity] | None = None) -> Prepared:
    problems = unknown_sources(plan.spec.restore.remaps, [s.name for s in plan.spec.sources])
    if problems:
        raise RestoreUsageError("; ".join(problems))
    snapshots = repo.snapshots()
    snapshot = repo.find_snapshot(snapshot_ref)
    artifacts = names.open_all(read_catalog(repo, snapshot.catalog), identities or [])  # format.md 8.1
    stored = {digest for digest, _ in repo.list_blobs()}
    restore_plan = plan_restore(plan, snapshot, artifacts, target, exporters=planning_exporters(plan, registry),
                                failed=list(failed), destinations=destinations, force=force,
                                blob_exists=stored.__contains__)
    return Prepared(plan, repo, target, snapshot, artifacts, restore_plan,
                    estimate(plan.spec.restore.rto, restore_plan.steps, snapshots))


@dataclass
class RestoreRun:
    restore_id: str
    resumed: bool
    run: int  # 1 for a new restore, 2 for its first resumption ...
    results: list[StepResult] = field(default_factory=list)
    damage: list[str] = field(default_factory=list)  # integrity problems its steps met (exit 6)

    def count(self, status: ResultStatus) -> int:
        return sum(1 for r in self.results if r.status == status)

    @property
    def finished(self) -> bool:
        return all(r.succeeded for r in self.results)

    def to_json(self) -> dict[str, Any]:
        return {"restore_id": self.restore_id, "resumed": self.resumed, "run": self.run,
                "finished": self.finished, "damage": self.damage, "steps": [r.to_json() for r in self.results]}


def record_sealer(plan: Plan) -> Callable[[Any], str] | None:
    """What stored records seal names with: the plan's recipients (docs/format.md 4.1)."""
    recipients = plan.spec.encryption.recipients
    if not recipients:
        return None
    parsed = encryption.parse_recipients(recipients)
    return lambda value: names.seal_json(value, parsed)


def journal_identity(prepared: Prepared, purpose: str) -> dict[str, Any]:
    """What makes two restores the same restore (a resumption continues it)."""
    rp = prepared.restore_plan
    return {"plan": rp.plan, "target": rp.target, "snapshot": rp.snapshot.id, "failed": sorted(rp.failed),
            "purpose": purpose}


def open_journal(prepared: Prepared, *, resume: str | None, new: bool, purpose: str) -> Journal | None:
    """The journal to continue, or None to start a new one."""
    if resume:
        journal = read_journal(prepared.repo, resume)
        if journal.header.get("snapshot") != prepared.snapshot.id:
            raise RestoreUsageError(f"restore {resume} is of snapshot {str(journal.header.get('snapshot'))[:8]}, "
                                    f"not {prepared.snapshot.short_id}: resume it with --snapshot "
                                    f"{journal.header.get('snapshot')}")
        return journal
    return None if new else newest_unfinished(prepared.repo, journal_identity(prepared, purpose))


def _header(prepared: Prepared, purpose: str) -> dict[str, Any]:
    rp = prepared.restore_plan
    steps = [{"seq": s.seq, "name": s.name, "exporter": s.exporter, "level": s.level + 1, "status": s.status,
              "verdict": s.verdict, "reason": s.reason, "requires": sorted(s.requires)} for s in rp.steps]
    return {**journal_identity(prepared, purpose), "plan_file": prepared.plan.path, "scenario": rp.label,
            "destinations": dict(sorted(rp.destinations.items())),
            "snapshot_time": rp.snapshot.to_json()["time"], "force": rp.force, "steps": steps}


def run_plan_restore(prepared: Prepared, registry: Registry, *,
                     identities: list[pyrage.x25519.Identity] | None = None, overwrite: bool = False,
                     parallel: int = 4, resume: str | None = None, new: bool = False, purpose: str = "restore",
                     on_event: Event = lambda kind, step, result: None,
                     log: Callable[[str], None] = lambda m: None) -> RestoreRun:
    journal = open_journal(prepared, resume=resume, new=new, purpose=purpose)
    if journal is None:
        journal, writer = start_journal(prepared.repo, _header(prepared, purpose), seal=record_sealer(prepared.plan))
        resumed = False
    else:
        writer = JournalWriter(prepared.repo, journal.restore_id, journal.next_seq, record_sealer(prepared.plan))
        resumed = True
    _check_steps(journal, prepared)
    earlier = journal.succeeded()
    run = journal.runs + 1
    rp = prepared.restore_plan
    if resumed:
        done = ", ".join(sorted(earlier)) or "no step"
        log(f"resuming restore {journal.restore_id} (run {run}): {done} succeeded earlier and will not be "
            "redone (--new starts over)")
    writer.put(RUN, {"record": RUN, "run": run, "resumed": resumed, "host": socket.gethostname(),
                     "force": rp.force, "overwrite": overwrite, "earlier": sorted(earlier),
                     "destinations": dict(sorted(rp.destinations.items())),
                     "remaps": [r.model_dump() for r in prepared.plan.spec.restore.remaps]})
    runner = StepRunner(prepared.plan, registry, ArtifactReader(prepared.repo, identities),
                        overwrite=overwrite, log=log)
    results = execute(rp, runner, earlier=earlier, journal=writer, run=run, parallel=parallel, on_event=on_event)
    said_damaged = [f"{o.item}: {o.reason}" for r in results for o in r.outcomes if o.damaged]
    outcome = RestoreRun(journal.restore_id, resumed, run, results,
                         list(dict.fromkeys(runner.reader.damage + said_damaged)))
    counts: dict[str, int] = {}
    for result in results:
        counts[result.status] = counts.get(result.status, 0) + 1
    writer.put(END, {"record": END, "run": run, "counts": counts, "finished": outcome.finished})
    return outcome


def _check_steps(journal: Journal, prepared: Prepared) -> None:
    planned = {s.name for s in prepared.restore_plan.steps}
    if set(journal.step_names()) != planned:
        raise JournalError(f"restore {journal.restore_id} planned steps {sorted(journal.step_names())}, this "
                           f"plan has {sorted(planned)}: start a new restore with --new")
