"""Checking a repository: every snapshot readable, every referenced blob present and intact.

Without read_data, referenced blobs are checked for existence (one listing); with read_data, every
referenced blob is downloaded and hashed (restic's `check --read-data`). verify() is `dr verify`:
check() of one snapshot or all, under a shared lock, so backups may run meanwhile but prune may not
delete what is being checked.

Blobs are not the whole story: a restore reassembles each artifact and refuses one whose size or
whole digest is not what the catalog says, so checking does too (dr.repository.artifact_checks).
Without reading data, what the listing tells is compared: a one-chunk artifact's digest and size
are its blob's, a plain artifact's size is the sum of its blobs'. With read_data, every distinct
plain artifact of several chunks is streamed and hashed as the reader would (its blobs are then
not read a second time), and secret ones are decrypted and measured when identities are given.

With a subset (dr.repository.data_subsets), read_data reads only the blobs in that part, and
streams only the artifacts whose own digest is in it: T runs over the T parts read every blob
and reassemble every artifact once.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Callable

from dr.repository import names
from dr.repository.artifact_checks import ArtifactChecks
from dr.repository.catalogs import catalog_damage, read_catalog
from dr.repository.data_subsets import DataSubset
from dr.repository.locks import Lock
from dr.repository.repositories import IntegrityError, Repository, RepositoryError


@dataclass
class CheckReport:
    snapshots: int = 0
    artifacts: int = 0
    blobs_checked: int = 0
    bytes_read: int = 0
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # what could not be checked, and why

    @property
    def ok(self) -> bool:
        return not self.problems

    def to_json(self) -> dict:
        return {"ok": self.ok, "snapshots": self.snapshots, "artifacts": self.artifacts,
                "blobs_checked": self.blobs_checked, "bytes_read": self.bytes_read,
                "problems": self.problems, "notes": self.notes}


def verify(repo: Repository, snapshot_ref: str | None = None, read_data: bool = False,
           on_blob: Callable[[int], None] | None = None, identities: list | None = None) -> CheckReport:
    """Check the snapshot `snapshot_ref` names (an id prefix or 'latest'), or every snapshot."""
    with Lock(repo, exclusive=False, command="dr verify").acquire():
        ids = [repo.find_snapshot(snapshot_ref).id] if snapshot_ref else None
        return check(repo, ids, read_data=read_data, on_blob=on_blob, identities=identities)


def check(repo: Repository, snapshot_ids: list[str] | None = None, read_data: bool = False,
          on_blob: Callable[[int], None] | None = None, workers: int = 8,
          identities: list | None = None, subset: DataSubset | None = None) -> CheckReport:
    report = CheckReport()
    repo.open()
    stored = dict(repo.list_blobs())
    referenced: set[str] = set()
    artifacts = ArtifactChecks(stored)
    for snapshot_id in snapshot_ids if snapshot_ids is not None else repo.snapshot_ids():
        _check_snapshot(repo, snapshot_id, stored, referenced, report, artifacts)
    report.problems += artifacts.listed_problems()
    if read_data:
        on = on_blob or (lambda n: None)
        holds = subset.holds if subset else (lambda digest: True)
        read = artifacts.read_all(repo, identities or [], report, on, workers, holds)
        _read_all(repo, sorted(d for d in (referenced & stored.keys()) - read if holds(d)), report, on, workers)
    return report


def _check_snapshot(repo: Repository, snapshot_id: str, stored: dict[str, int],
                    referenced: set[str], report: CheckReport, checks: ArtifactChecks) -> None:
    try:
        snapshot = repo.load_snapshot(snapshot_id)
    except RepositoryError as exc:
        report.problems.append(f"snapshot {snapshot_id[:8]}: {exc}")
        return
    report.snapshots += 1
    referenced.add(snapshot.catalog)
    try:
        artifacts = list(read_catalog(repo, snapshot.catalog))
    except RepositoryError as exc:  # name the object and what it held: the blob alone says neither
        report.problems.append(catalog_damage(snapshot_id, snapshot.catalog, exc))
        return
    if len(artifacts) != snapshot.catalog_entries:
        report.problems.append(f"snapshot {snapshot.short_id}: catalog has {len(artifacts)} entries, "
                               f"manifest says {snapshot.catalog_entries}")
    for artifact in artifacts:
        report.artifacts += 1
        checks.add(snapshot.short_id, artifact)
        for digest in artifact.chunks:
            referenced.add(digest)
            if digest not in stored:
                report.problems.append(f"snapshot {snapshot.short_id}: {names.shown(artifact)}: "
                                       f"blob {digest} is missing")


def _read_all(repo: Repository, digests: list[str], report: CheckReport,
              on_blob: Callable[[int], None], workers: int) -> None:
    def read(digest: str) -> tuple[str, int, str]:
        try:
            return digest, len(repo.read_blob(digest)), ""
        except IntegrityError as exc:
            return digest, 0, str(exc)

    with ThreadPoolExecutor(max_workers=workers) as pool:
        for digest, size, problem in pool.map(read, digests):
            report.blobs_checked += 1
            report.bytes_read += size
            on_blob(size)
            if problem:
                report.problems.append(problem)
