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


def check_object_lock(repo: Repository, target: TargetSpec) -> None:
    """A target whose plan says `object_lock: true` must be a bucket with Object Lock enabled:
    the plan (and the audit that reads it) count on snapshots that cannot be deleted or
    overwritten, so a backup refuses rather than write where that is not so."""
    if not target.object_lock:
        return
    store = getattr(repo.store, "inner", repo.store)  # under the retrying wrapper
    probe = getattr(store, "object_lock_enabled", None)
    if probe is None:
        raise RepositoryError(f"target {target.name}: the plan says object_lock: true, but "
                              f"{repo.description} is not an S3 bucket; only S3 targets have Object Lock")
    if not probe():
        raise RepositoryError(f"target {target.name}: the plan says object_lock: true, but the bucket of "
                              f"{repo.description} does not have Object Lock enabled; create the bucket "
                              "with Object Lock (or enable it on the bucket), or remove object_lock "
                              "from the target")
