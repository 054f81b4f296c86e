"""Verifying a drill's restore: a second restore pass that changes nothing, and content that is the backup's.

Where it sits: dr.drills.drilling calls verify() after the restore. Two checks per step:
  again    every step restored a second time. Exporters restore idempotently: an item already
           in place and identical is UNCHANGED (files compare digests, git compares every ref,
           kubernetes compares each live object with the backup), so a pass that is all
           UNCHANGED (or deliberately SKIPPED) shows the exporter finds nothing to do. Anything
           else is named: RESTORED means the first pass had left it missing; CONFLICT that it
           differs; FAILED that it could not even be compared.
  content  that pass trusts the exporter's comparison, so the items the exporter places
           (Exporter.restored_content) are compared here with the catalog's digests, or its
           fingerprints of the destination and the backup (dr.drills.comparing). An item that
           differs fails the step; a step whose exporter places nothing is verified by the
           second pass alone, and its reason says so.
"""

from __future__ import annotations

from typing import Any, Callable

import pyrage

from dr.contract import OutcomeStatus
from dr.contract.registry import Registry
from dr.drills.comparing import Comparison, compare
from dr.planner.steps import Step
from dr.repository.reading import ArtifactReader
from dr.restore import Prepared
from dr.restore.executing import StepRunner
from dr.restore.restoring import record_sealer
from dr.restore.results import StepResult

IN_PLACE = (OutcomeStatus.UNCHANGED, OutcomeStatus.SKIPPED)


def verify(prepared: Prepared, registry: Registry, results: list[StepResult],
           identities: list[pyrage.x25519.Identity] | None = None) -> list[dict[str, Any]]:
    """One entry per step: verified or not, and why."""
    reader = ArtifactReader(prepared.repo, identities)
    runner = StepRunner(prepared.plan, registry, reader, overwrite=False)
    seal = record_sealer(prepared.plan)
    by_name = {r.name: r for r in results}
    checks = []
    for step in prepared.restore_plan.steps:
        result = by_name[step.name]
        if not result.succeeded:
            checks.append({"step": step.name, "verified": False, "seconds": 0.0,
                           "reason": f"not verified: the restore step {result.status} ({result.reason})"})
            continue
        again = runner(step)
        check = _second_pass(step, again)
        if check["verified"]:
            check = _content(check, step, _compared(prepared, registry, step, reader),
                             seal if step.holds_secrets else None)
        checks.append(check)
    return checks


def _second_pass(step: Step, again: StepResult) -> dict[str, Any]:
    off = [o for o in again.outcomes if o.status not in IN_PLACE]
    reason = (f"all {len(again.outcomes)} items in place (a second restore changed nothing)") if not off else \
        f"{len(off)} of {len(again.outcomes)} items were not in place: " + \
        "; ".join(f"{o.item} {o.status.value}: {o.reason}" for o in off[:5])
    return {"step": step.name, "verified": not off, "seconds": round(again.seconds, 3),
            "reason": reason, "counts": again.counts()}


def _compared(prepared: Prepared, registry: Registry, step: Step, reader: ArtifactReader) -> Comparison | str:
    """The step's comparison, or why it could not be made (the exporter or the reader raised)."""
    try:
        return compare(prepared.plan, registry, step, reader)
    except Exception as exc:  # one step's failure to compare is its verdict, never the end of the drill
        return f"{type(exc).__name__}: {exc}"


def _content(check: dict[str, Any], step: Step, comparison: Comparison | str,
             seal: Callable[[Any], str] | None) -> dict[str, Any]:
    """The second pass's check, with what comparing the content with the backup found."""
    if isinstance(comparison, str):  # an exception's text may name a secret item: sealed like them
        failed = {**check, "verified": False, "reason": "the restored content could not be compared with the backup"}
        if seal is not None:
            return {**failed, "reason": failed["reason"] + " (the error is sealed: error_sealed)",
                    "error_sealed": seal(comparison)}
        return {**failed, "reason": f"{failed['reason']}: {comparison}"}
    check = {**check, "compared": comparison.checked, "mismatches": []}
    if comparison.mismatches:
        return {**check, "verified": False, **_mismatched(comparison, seal)}
    if comparison.checked < comparison.total:
        unchecked = comparison.total - comparison.checked
        return {**check, "reason": check["reason"] + f"; {unchecked} of {comparison.total} items not compared "
                                   f"with the backup (exporter {step.exporter} does not say where its restore "
                                   "puts them: Exporter.restored_content)"}
    return {**check, "reason": f"all {comparison.total} items identical to the backup (compared with the "
                               "catalog's digests or the exporter's fingerprints; a second restore changed nothing)"}


def _mismatched(comparison: Comparison, seal: Callable[[Any], str] | None) -> dict[str, Any]:
    """The reason and the items that differ; in a secret step, the items sealed (format.md 4.1)."""
    items = [{"item": item, "reason": why} for item, why in comparison.mismatches]
    head = f"{len(items)} of {comparison.total} items differ from the backup"
    if seal is not None:
        return {"reason": f"{head}; their names and reasons are sealed (mismatches_sealed)",
                "mismatches": [], "mismatches_sealed": seal(items[:50])}
    shown = "; ".join(f"{i['item']}: {i['reason']}" for i in items[:5])
    return {"reason": f"{head}: {shown}", "mismatches": items[:50]}
