"""Status: how much would be lost now, what `dr status` runs as a library (the CLI prints it).

Where it sits: beside drills and verifying, under the CLI. Per source, the age of its newest good
backup against its RPO and what that backup noticed, with each exporter's own recovery points
(dr.audit.rpo_status); then the newest copies outside the repository that no exporter's own
rpo_report checks (images in DR registries, model weights), checked exactly as `dr verify` checks
them (dr.restore.copies). All of it under the repository's shared lock taken here, so a prune
never forgets a snapshot that status is reading. A copy a restore would refuse is a recovery point
already lost, so it is a breach.
"""

from __future__ import annotations

from dr.audit.rpo_status import RpoStatus, rpo_status
from dr.contract.capabilities import overrides
from dr.contract.registry import PluginError, Registry
from dr.model.plans import Plan, TargetSpec
from dr.repository.locks import Lock
from dr.repository.repositories import IntegrityError, NotARepository, Repository
from dr.repository.targets import open_target
from dr.restore.copies import check_outside_copies

__all__ = ["RpoStatus", "current_status"]


def current_status(plan: Plan, registry: Registry, target: TargetSpec, *, read_data: bool = False,
                   identities: list | None = None, lock_wait: float = 0.0) -> RpoStatus:
    """Every source's and every recovery point's row, breaches marked: all of it read under one
    shared lock, so a prune (exclusive) never forgets a snapshot or deletes a catalog mid-read."""
    repo = open_target(plan, target)
    try:
        repo.open()
    except (NotARepository, IntegrityError):
        # nothing backed up yet, or a damaged config: nothing to lock, the per-source rows say so
        return rpo_status(plan, registry, target, read_data=read_data)
    with Lock(repo, exclusive=False, command="dr status").acquire(lock_wait):
        status = rpo_status(plan, registry, target, read_data=read_data)
        status.runs.extend(_copy_rows(plan, registry, repo, read_data, identities, status.problems))
    return status


def _copy_rows(plan: Plan, registry: Registry, repo: Repository, read_data: bool, identities: list | None,
               problems: list[str]) -> list[dict]:
    """The copies' rows; a catalog too damaged to say which copies there are is added to `problems`."""
    sources = {s.name for s in plan.spec.sources if not _reports_own_copies(registry, s.type)}
    found = check_outside_copies(plan, registry, repo, read_data=read_data, identities=identities,
                                 sources=sources)
    problems += [c.unchecked for c in found if c.unchecked and c.unchecked not in problems]
    found = [c for c in found if not c.unchecked]
    return [{"source": copies.source, "subject": f"{copies.source} copy {report.what}",
             "detail": (f"at {report.where} (snapshot {copies.snapshot}): " + "; ".join(report.problems))
             if report.problems else f"at {report.where} (snapshot {copies.snapshot}) checks out",
             "breach": not report.ok, **report.data}
            for copies in found for report in copies.reports]


def _reports_own_copies(registry: Registry, kind: str) -> bool:
    """An exporter with its own rpo_report checks its copies there (checkpoints: per run and tier)."""
    try:
        return overrides(registry.get(kind), "rpo_report")
    except PluginError:
        return True  # the plan's plugin problems are reported when it loads
