"""Verifying a drill's restore: restore every step a second time and expect nothing to change.

Where it sits: dr.drills.drilling calls verify() after the restore. Exporters restore
idempotently: an item already in place and identical is UNCHANGED (files compare digests, git
compares every ref, kubernetes compares each live object with the backup). So a second pass
that is all UNCHANGED (or deliberately SKIPPED) proves the destination holds the backup, with
the exporters' own comparisons, and nothing new to trust. Anything else is named: RESTORED
means the first pass had left it missing; CONFLICT that it differs; FAILED that it could not
even be compared.
"""

from __future__ import annotations

from typing import Any

import pyrage

from dr.exporters.contract import OutcomeStatus
from dr.exporters.registry import Registry
from dr.repository.reading import ArtifactReader
from dr.restore import Prepared
from dr.restore.executing import StepRunner
from dr.restore.steps import StepResult

IN_PLACE = (OutcomeStatus.UNCHANGED, OutcomeStatus.SKIPPED)


def verify(prepared: Prepared, registry: Registry, results: list[StepResult],
           identities: list[pyrage.x25519.Identity] | None = None) -> list[dict[str, Any]]:
    """One entry per step: verified or not, and why."""
    runner = StepRunner(prepared.plan, registry, ArtifactReader(prepared.repo, identities), overwrite=False)
    by_name = {r.name: r for r in results}
    checks = []
    for step in prepared.restore_plan.steps:
        result = by_name[step.name]
        if not result.succeeded:
            checks.append({"step": step.name, "verified": False, "seconds": 0.0,
                           "reason": f"not verified: the restore step {result.status} ({result.reason})"})
            continue
        again = runner(step)
        off = [o for o in again.outcomes if o.status not in IN_PLACE]
        reason = (f"all {len(again.outcomes)} items in place and identical to the backup (a second restore "
                  "changed nothing)") if not off else \
            f"{len(off)} of {len(again.outcomes)} items were not in place: " + \
            "; ".join(f"{o.item} {o.status.value}: {o.reason}" for o in off[:5])
        checks.append({"step": step.name, "verified": not off, "seconds": round(again.seconds, 3),
                       "reason": reason, "counts": again.counts()})
    return checks
