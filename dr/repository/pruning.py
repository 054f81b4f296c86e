"""Pruning: forget snapshots retention no longer keeps, then sweep unreferenced blobs.

prune_by_retention() is `dr prune`: it takes the repository's exclusive lock, asks the plan's
retention (dr.model.retention) what to forget, and prunes. prune() itself must run under an
exclusive lock, so no backup is writing blobs that are not yet referenced.
Mark: every blob referenced by a remaining manifest (its catalog and the catalog's chunks).
Sweep: delete the rest. A blob any remaining snapshot references is never deleted: when a
manifest or a catalog cannot be read, the blobs it references cannot be known, so the sweep
deletes nothing (the report lists the damage, runbooks/damaged-snapshot.md says what to do);
retention still forgets among the intact snapshots, so one damaged snapshot does not stop
prune.
On an immutable target (Object Lock, dr.repository.immutability) prune never asks S3 to delete
a locked object: a forgotten snapshot's manifest that is still locked is hidden by a delete
marker (the snapshot is forgotten; its bytes stay until retention ends), and an unreferenced
blob that is still locked stays where it is and is listed as held. Later prunes remove both
once their retention has passed.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from dr.model import clock
from dr.model.plans import Plan, TargetSpec
from dr.model.retention import snapshots_to_forget
from dr.repository import immutability, layout
from dr.repository.catalogs import read_catalog
from dr.repository.locks import Lock
from dr.repository.repositories import IntegrityError, Repository


@dataclass
class PruneReport:
    forgotten: list[str] = field(default_factory=list)
    blobs_deleted: int = 0
    bytes_freed: int = 0
    blobs_kept: int = 0
    staging_removed: int = 0
    snapshots_examined: int = 0  # how many there were before forgetting (for the summary line)
    # Object Lock: unreferenced blobs still locked (left in place), and objects hidden earlier
    # (forgotten manifests, released locks) still locked / now removed.
    blobs_held: list[immutability.Held] = field(default_factory=list)
    hidden_held: list[immutability.Held] = field(default_factory=list)
    hidden_removed: int = 0
    damaged: list[str] = field(default_factory=list)  # unreadable manifests and catalogs: nothing swept

    def to_json(self) -> dict:
        return {"forgotten": self.forgotten, "blobs_deleted": self.blobs_deleted,
                "bytes_freed": self.bytes_freed, "blobs_kept": self.blobs_kept,
                "staging_removed": self.staging_removed,
                "blobs_held": [h.to_json() for h in self.blobs_held],
                "hidden_held": [h.to_json() for h in self.hidden_held],
                "hidden_removed": self.hidden_removed, "damaged": self.damaged}


def referenced_blobs(repo: Repository, excluding: set[str] = frozenset()) -> set[str]:
    """Every blob a snapshot references, except snapshots in `excluding`; IntegrityError when a
    manifest or catalog cannot be read (what it references is then unknown)."""
    referenced, damaged = _marked(repo, excluding)
    if damaged:
        raise IntegrityError(damaged[0])
    return referenced


def _marked(repo: Repository, excluding: set[str]) -> tuple[set[str], list[str]]:
    """(blobs the readable snapshots reference, what could not be read)."""
    referenced: set[str] = set()
    damaged: list[str] = []
    for snapshot_id in repo.snapshot_ids():
        if snapshot_id in excluding:
            continue
        try:
            snapshot = repo.load_snapshot(snapshot_id)
            referenced.add(snapshot.catalog)
            for artifact in read_catalog(repo, snapshot.catalog):
                referenced.update(artifact.chunks)
        except IntegrityError as exc:
            damaged.append(str(exc))
    return referenced, damaged


def prune(repo: Repository, forget_ids: list[str], dry_run: bool = False) -> PruneReport:
    """Forget `forget_ids`, then delete every blob no remaining snapshot references.

    The mark phase reads every remaining catalog first, then manifests are removed, then blobs:
    a crash in between only leaves unreferenced blobs for the next prune. When a remaining
    manifest or catalog cannot be read, no blob is deleted (report.damaged says why).
    """
    report = PruneReport(forgotten=list(forget_ids))
    keep, report.damaged = _marked(repo, set(forget_ids))
    if not dry_run:
        for snapshot_id in forget_ids:
            repo.forget(snapshot_id)  # a locked manifest is hidden, not deleted (module docstring)
    now = clock.now()
    for digest, size in list(repo.list_blobs()):
        if digest in keep or report.damaged:
            report.blobs_kept += 1
            continue
        until = immutability.held_until(repo, layout.blob_key(digest), now)
        if until is not None:
            report.blobs_held.append(immutability.Held(layout.blob_key(digest), until))
            continue
        report.blobs_deleted += 1
        report.bytes_freed += size
        if not dry_run:
            repo.store.delete(layout.blob_key(digest))
    if not dry_run:
        report.staging_removed = repo.store.clear_staging()
        report.hidden_removed, report.hidden_held = immutability.reclaim_hidden(
            repo, [layout.SNAPSHOTS, layout.LOCKS])
    return report


def prune_by_retention(plan: Plan, repo: Repository, dry_run: bool = False,
                       target: TargetSpec | None = None, lock_wait: float = 0.0) -> PruneReport:
    """Forget every snapshot that no source's retention keeps, then sweep, under the exclusive
    lock (no backup may be writing blobs its manifest does not reference yet). With the plan's
    `target`, an immutable one is checked (and its store set to lock) before the lock's write;
    `lock_wait`: how long to wait for running backups' locks to go."""
    if target is not None:
        immutability.prepare(plan, target, repo)
    with Lock(repo, exclusive=True, command="dr prune").acquire(lock_wait):
        snapshots, _ = repo.intact_snapshots()  # the damaged ones: prune() keeps their blobs
        policies = [(s.name, plan.retention_for(s).model_dump()) for s in plan.spec.sources]
        report = prune(repo, snapshots_to_forget(snapshots, policies), dry_run=dry_run)
    report.snapshots_examined = len(snapshots)
    return report
