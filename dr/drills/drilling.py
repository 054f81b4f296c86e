"""A drill: audit, restore into a scratch target, verify, and record what actually happened.

Where it sits: `dr drill` calls run_drill(). The phases, each timed on the wall clock:
  audit    dr.audit over the same snapshot and failed domains (its blockers are recorded);
  plan     the restore plan, with its RTO estimate (recorded next to what was measured);
  restore  every step into the scratch destinations, journaled like any restore (a new journal,
           purpose "drill", so a real restore never resumes a drill's);
  verify   a second restore pass that must change nothing, and the restored content compared
           with the catalog's digests or the exporter's fingerprints (dr.drills.verifying).
The measured RPO is the age of the data restored when the restore ended (that moment minus
the snapshot's time). The record keeps every step's outcome, the audit's blockers, the
estimate and the measurements, and a result that follows from them: `recovered` only when
every step was restored and verified, `partial` when some were, `failed` when none was. It is
written to the history (dr.drills.history) whatever the result.
"""

from __future__ import annotations

import socket
import time
from contextlib import contextmanager
from datetime import datetime, timezone
from typing import Any, Callable, Iterator

import pyrage

from dr.audit import choose_audited_target, run_audit, scenarios_for
from dr.contract.registry import Registry
from dr.drills.history import write_record
from dr.drills.verifying import verify
from dr.model.plans import Plan
from dr.planner.destinations import scratch_destinations
from dr.planner.planning import planning_exporters
from dr.repository.drill_records import FORMAT, VERSION
from dr.repository.locks import Lock
from dr.repository.records import utc
from dr.repository.targets import open_target
from dr.restore import Prepared, RestoreRun, prepare, run_plan_restore
from dr.restore.executing import Event
from dr.restore.restoring import record_sealer


class Stopwatch:
    def __init__(self) -> None:
        self.phases: dict[str, float] = {}

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        started = time.monotonic()
        try:
            yield
        finally:
            self.phases[name] = round(time.monotonic() - started, 3)


def destinations_for(plan: Plan, registry: Registry, scratch: str | None,
                     explicit: dict[str, str]) -> dict[str, str]:
    found = scratch_destinations(scratch, planning_exporters(plan, registry)) if scratch else {}
    return {**found, **explicit}


def run_drill(plan: Plan, registry: Registry, *, failed: list[str], scratch: str | None = None,
              destinations: dict[str, str] | None = None, snapshot_ref: str = "latest",
              target_name: str | None = None, identities: list[pyrage.x25519.Identity] | None = None,
              force: bool = False, parallel: int = 4, lock_wait: float = 0.0,
              on_plan: Callable[[Prepared], None] = lambda p: None,
              on_event: Event = lambda kind, step, result: None,
              matrix: dict[str, Any] | None = None) -> dict[str, Any]:
    """Run one drill and append its record to the history; return the record. matrix: the
    `{id, scenarios}` of the drill matrix this drill is part of (dr.drills.matrix), kept in the
    record."""
    started = datetime.now(timezone.utc)
    clock = Stopwatch()
    scenarios = scenarios_for(plan, failed)
    target = choose_audited_target(plan, scenarios, target_name)
    repo = open_target(plan, target)
    repo.open()
    with Lock(repo, exclusive=False, command=f"dr drill --plan {plan.name}").acquire(lock_wait):
        snapshot = repo.find_snapshot(snapshot_ref)
        with clock.phase("audit"):
            report = run_audit(plan, repo, target, scenarios, snapshot_ref=snapshot.id,
                               exporters=planning_exporters(plan, registry))
        with clock.phase("plan"):
            prepared = prepare(plan, repo, target, registry, snapshot_ref=snapshot.id, failed=failed, force=force,
                               identities=identities,
                               destinations=destinations_for(plan, registry, scratch, destinations or {}))
        on_plan(prepared)
        with clock.phase("restore"):
            run = run_plan_restore(prepared, registry, identities=identities, parallel=parallel, new=True,
                                   purpose="drill", on_event=on_event)
        restored_at = datetime.now(timezone.utc)
        with clock.phase("verify"):
            checks = verify(prepared, registry, run.results, identities)
        record = _record(plan, prepared, run, report, checks, clock, started, restored_at)
        if matrix is not None:
            record["matrix"] = dict(matrix)
        record["key"] = write_record(repo, record)
    return record


def _record(plan: Plan, prepared: Prepared, run: RestoreRun, report, checks: list[dict], clock: Stopwatch,
            started: datetime, restored_at: datetime) -> dict[str, Any]:
    rp = prepared.restore_plan
    verified = [c["step"] for c in checks if c["verified"]]
    return {
        "format": FORMAT, "version": VERSION, "id": run.restore_id, "plan": plan.name, "plan_file": plan.path,
        "host": socket.gethostname(), "started": utc(started), "finished": utc(),
        "failed": list(rp.failed), "scenario": rp.label, "target": rp.target,
        "snapshot": {"id": rp.snapshot.id, "time": rp.snapshot.to_json()["time"]},
        "rpo_seconds": round((restored_at - rp.snapshot.time).total_seconds(), 3),
        "rto": {"total_seconds": round(sum(clock.phases.values()), 3), "phases": dict(clock.phases),
                "steps": {r.name: round(r.seconds, 3) for r in run.results if not r.earlier}},
        "rto_estimate": prepared.estimate.to_json(),
        "audit": _audit_summary(report),
        "restore": {"restore_id": run.restore_id, "destinations": dict(rp.destinations),
                    "steps": _stored_steps(prepared, run)},
        "verify": {"steps": checks},
        **_result(len(rp.steps), verified, run),
    }


def _stored_steps(prepared: Prepared, run: RestoreRun) -> list[dict[str, Any]]:
    """The step results as the record stores them: failed items of secret steps sealed (4.1)."""
    seal = record_sealer(prepared.plan)
    secret = {s.name for s in prepared.restore_plan.steps if s.holds_secrets}
    return [r.to_json(seal if r.name in secret else None) for r in run.results]


def _audit_summary(report) -> dict[str, Any]:
    shown = [f for f in report.findings if f.severity in ("blocker", "warning")][:50]
    return {"blockers": report.blockers, "warnings": report.warnings, "remaps": report.infos,
            "findings": [{"code": f.code, "severity": f.severity, "scenario": f.scenario,
                          "reference": f.reference} for f in shown]}


def _result(total: int, verified: list[str], run: RestoreRun) -> dict[str, Any]:
    if total and len(verified) == total:
        result = "recovered"
    elif verified:
        result = "partial"
    else:
        result = "failed"
    states: dict[str, list[str]] = {}
    for r in run.results:
        if r.name not in verified:
            states.setdefault("not verified" if r.succeeded else r.status, []).append(r.name)
    detail = "; ".join(f"{state}: {', '.join(names)}" for state, names in sorted(states.items()))
    summary = f"{len(verified)} of {total} steps restored and verified" + (f"; {detail}" if detail else "")
    return {"result": result, "summary": summary}
