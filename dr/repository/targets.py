"""Opening a plan's target as a repository."""

from __future__ import annotations

from dr.model.plans import Plan, TargetSpec
from dr.repository.repositories import Repository, RepositoryError
from dr.repository.stores.opening import open_store


def open_target(plan: Plan, target: TargetSpec) -> Repository:
    try:
        store = open_store(target.url, region=target.region, endpoint_url=target.endpoint_url,
                           profile=target.profile, base_dir=plan.base_dir)
    except ValueError as exc:  # the plan's URL is one no store accepts: the operator's to fix
        raise RepositoryError(f"target '{target.name}': {exc}") from None
    return Repository(store)


def choose_target(plan: Plan, name: str | None) -> TargetSpec:
    """The named target (NotInPlan if there is none), or the first one that survives every
    protected domain."""
    return plan.target(name) if name else plan.primary_target()
