"""Immutable targets: S3 Object Lock retention on every object dr writes (docs/format.md 23).

A target with `immutability: {mode, days}` is checked before the first write (the bucket must
have Object Lock enabled: a plan error otherwise), then its store puts every object with
ObjectLockMode and ObjectLockRetainUntilDate = now + days. A backup extends the retention of
the blobs it references but did not write (they were written by earlier snapshots), so every
object a snapshot needs stays locked for `days` after it. Prune asks here which unreferenced
blobs it may delete yet; locked ones it leaves, and lists.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Callable, Iterable

from dr.model.plan_loading import PlanError, Problem
from dr.model.plans import Plan, TargetSpec
from dr.repository import layout
from dr.repository.repositories import Repository


@dataclass
class Held:
    """An object prune may not delete yet, and when it may."""

    key: str
    until: datetime

    def to_json(self) -> dict:
        return {"key": self.key, "until": self.until.strftime("%Y-%m-%dT%H:%M:%SZ")}


def _s3(repo: Repository):
    """The S3 store (under a counting wrapper, in tests), or None (a store without Object Lock).
    Its Object Lock calls retry under its place's policy themselves."""
    store = getattr(repo.store, "inner", repo.store)
    return store if hasattr(store, "retain_objects") else None


def lock_store(repo: Repository):
    """The store, when it writes with Object Lock retention; else None."""
    store = _s3(repo)
    return store if store is not None and store.retention is not None else None


def prepare(plan: Plan, target: TargetSpec, repo: Repository) -> None:
    """Before the first write: refuse a bucket without Object Lock (a plan error, exit 2), then
    make the store lock what it writes. A target without `immutability` is left as it is."""
    if target.immutability is None:
        return
    store = _s3(repo)
    index = plan.spec.targets.index(target)
    field = f"targets[{index}].immutability"
    if store is None:  # plan_rules refuses it at load; this is the backstop
        raise PlanError([Problem(plan.path, field, f"target '{target.name}' is not an S3 bucket",
                                 "an s3:// target, or no immutability")])
    if not store.object_lock_enabled():
        raise PlanError([Problem(
            plan.path, field,
            f"target '{target.name}': bucket '{store.bucket}' does not have Object Lock enabled",
            "a bucket created with Object Lock (aws s3api create-bucket --object-lock-enabled-for-bucket, "
            "or put-object-lock-configuration with ObjectLockEnabled=Enabled on a versioned bucket), "
            f"or remove immutability from target '{target.name}'")])
    from dr.repository.stores.s3 import ObjectRetention

    store.retain_objects(ObjectRetention(target.immutability.mode.upper(), target.immutability.days))


def extend(repo: Repository, digests: Iterable[str], run: Callable[[list[Callable]], None]) -> None:
    """Lock again, for the full period from now, the blobs a new snapshot reuses. `run`
    schedules each call (the writer's upload pool) and waits for them all."""
    store = lock_store(repo)
    if store is None:
        return
    run([lambda d=d: store.extend_retention(layout.blob_key(d)) for d in digests])


def held_until(repo: Repository, key: str, now: datetime) -> datetime | None:
    """When `key`'s retention ends, if it has not yet; None: prune may delete it."""
    store = lock_store(repo)
    if store is None:
        return None
    until = store.retained_until(key)
    return until if until is not None and until > now else None


def reclaim_hidden(repo: Repository, prefixes: Iterable[str]) -> tuple[int, list[Held]]:
    """Objects an earlier prune (or lock release) hid behind a delete marker while they were
    locked: remove each one whose retention has passed. (removed, still held)."""
    store = lock_store(repo)
    if store is None:
        return 0, []
    removed, held = 0, []
    for prefix in prefixes:
        for key, versions in store.versions(prefix).items():
            if not any(v["IsLatest"] and v["marker"] for v in versions):
                continue  # visible: not hidden
            until = store.purge(key, versions)
            if until is None:
                removed += 1
            else:
                held.append(Held(key, until))
    return removed, held
