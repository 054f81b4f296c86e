"""Verifying: what `dr verify` runs, as a library (the CLI parses the command line and prints).

Where it sits: beside drills, under the CLI. It drives the repository's own check
(dr.repository.checking: snapshots, catalogs, blobs) and then the check of the copies exporters
keep outside the repository (dr.restore.copies: checkpoint DR copies, images in DR registries),
under one shared lock taken here, so that a prune cannot delete what is being read and neither
check sees a repository the other did not. A check of one exporter type's outside copies alone
(dr verify --type) takes the same lock and leaves the repository's own check out.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from dr.contract.registry import Registry
from dr.model.plans import Plan
from dr.repository import checking
from dr.repository.data_subsets import DataSubset
from dr.repository.locks import Lock
from dr.repository.repositories import IntegrityError, Repository
from dr.restore.copies import SourceCopies, check_outside_copies


class NoSourceOfType(ValueError):
    """The plan has no source of the type asked for."""


@dataclass
class Verified:
    report: checking.CheckReport | None  # None when only outside copies were checked
    outside: list[SourceCopies]
    unchecked: list[str] = field(default_factory=list)  # sources of the type with no copy recorded

    @property
    def problems(self) -> int:
        own = len(self.report.problems) if self.report is not None else 0
        return own + sum(len(r.problems) for found in self.outside for r in found.reports if not r.ok)


def verify_all(plan: Plan, registry: Registry, repo: Repository, *, snapshot: str | None = None,
               read_data: bool = False, subset: DataSubset | None = None, identities: list | None = None,
               lock_wait: float = 0.0, on_blob: Callable[[int], None] = lambda n: None) -> Verified:
    """The repository (every snapshot, or `snapshot`), then every source's outside copies."""
    with Lock(repo, exclusive=False, command="dr verify").acquire(lock_wait):  # one lock for both checks
        try:
            ids = [repo.find_snapshot(snapshot).id] if snapshot else None
        except IntegrityError as exc:  # the snapshot asked for (or, for latest, one that may be it) is damaged
            return Verified(checking.CheckReport(problems=[str(exc)]), [])
        report = checking.check(repo, ids, read_data=read_data or bool(subset), on_blob=on_blob,
                                identities=identities, subset=subset)
        outside = check_outside_copies(plan, registry, repo, snapshot_ref=snapshot, read_data=read_data,
                                       identities=identities)
    return Verified(report, outside)


def verify_type(plan: Plan, registry: Registry, repo: Repository, type_name: str, *, snapshot: str | None = None,
                read_data: bool = False, identities: list | None = None, lock_wait: float = 0.0) -> Verified:
    """The outside copies of the plan's sources of one exporter type, as their exporter checks them."""
    names = {s.name for s in plan.spec.sources if s.type == type_name}
    if not names:
        types = sorted({s.type for s in plan.spec.sources})
        raise NoSourceOfType(f"no source of type {type_name} (its sources' types: {', '.join(types)})")
    with Lock(repo, exclusive=False, command=f"dr verify --type {type_name}").acquire(lock_wait):
        outside = check_outside_copies(plan, registry, repo, snapshot_ref=snapshot, read_data=read_data,
                                       identities=identities, sources=names)
    return Verified(None, outside, sorted(names - {c.source for c in outside}))
