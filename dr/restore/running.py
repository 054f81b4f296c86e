"""Running a restore of one source from one snapshot.

Reads under a shared lock (a prune cannot delete what is being read). Every chunk is verified
as it is read (dr.repository.reading); the exporter reports one outcome per item.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator

import pyrage

from dr.contract import ExportContext, Outcome, OutcomeStatus, RestoreRequest
from dr.contract.registry import Registry
from dr.model.plans import Plan
from dr.model.snapshots import Snapshot, SourceResult, failed_runs, failed_since, newest_good
from dr.repository import names
from dr.repository.catalogs import read_catalog
from dr.repository.encryption import EncryptionError
from dr.repository.locks import Lock
from dr.repository.reading import ArtifactReader
from dr.repository.repositories import IntegrityError, RepositoryError
from dr.repository.targets import choose_target, open_target


@dataclass
class RestoreResult:
    source: str
    snapshot: Snapshot
    outcomes: list[Outcome] = field(default_factory=list)
    damage: list[str] = field(default_factory=list)  # integrity problems met reading (exit 6)
    failed_since: list[SourceResult] = field(default_factory=list)  # latest: the source's failed runs since

    def failed_runs(self) -> str:
        """"the 4 runs since failed: <why>", empty when none did (or a snapshot was named)."""
        reason = self.failed_since[-1].failure() if self.failed_since else ""
        return failed_runs(len(self.failed_since), reason, True).removeprefix("; ")

    @property
    def failed(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.failed]

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for outcome in self.outcomes:
            out[outcome.status.value] = out.get(outcome.status.value, 0) + 1
        return out

    def to_json(self) -> dict:
        return {"source": self.source, "snapshot": self.snapshot.id, "counts": self.counts(),
                "failed_runs_since": len(self.failed_since), "outcomes": [o.to_json() for o in self.outcomes]}


def run_restore(plan: Plan, registry: Registry, source_name: str, snapshot_ref: str = "latest", *,
                request: RestoreRequest, identities: list[pyrage.x25519.Identity] | None = None,
                target_name: str | None = None, lock_wait: float = 0.0) -> RestoreResult:
    source = plan.source(source_name)
    repo = open_target(plan, choose_target(plan, target_name))
    repo.open()
    with Lock(repo, exclusive=False, command=f"dr restore --source {source_name}").acquire(lock_wait):
        snapshot, failed = _choose(repo, snapshot_ref, source_name)
        if source_name not in snapshot.source_names():
            raise RepositoryError(f"snapshot {snapshot.short_id} holds no data for source '{source_name}'")
        artifacts = [a for a in read_catalog(repo, snapshot.catalog) if a.source == source_name]
        context = ExportContext(source.name, plan.options[source.name], plan.base_dir, source.sensitivity)
        exporter = registry.get(source.type)(context)
        result = RestoreResult(source_name, snapshot, failed_since=failed)
        reader = ArtifactReader(repo, identities)
        try:
            result.outcomes.extend(restore_opened(exporter, artifacts, reader, request))
        except IntegrityError as exc:
            result.outcomes.append(Outcome(source_name, OutcomeStatus.FAILED, f"integrity: {reader.met(exc)}"))
        except EncryptionError as exc:  # secret content and no identity that opens it
            result.outcomes.append(Outcome(source_name, OutcomeStatus.FAILED, f"decryption: {exc}"))
        said_damaged = [f"{o.item}: {o.reason}" for o in result.outcomes if o.damaged]
        result.damage = list(dict.fromkeys(reader.damage + said_damaged))
        return result


def restore_opened(exporter, artifacts: list, reader: ArtifactReader, request: RestoreRequest) -> Iterator[Outcome]:
    """The exporter's outcomes for the artifacts whose sealed names an identity opens, and a
    failed item per one none opens (format.md 8.1): a restore never writes under a digest's name.
    When none opens, the exporter is not called: it writes nothing, not even the --to directory
    (an exporter that restores all or nothing, files, would refuse them all anyway)."""
    opened, refused = names.split_open(artifacts, reader.identities)
    for artifact, why in refused:
        yield Outcome(f"{artifact.kind} {artifact.identity}", OutcomeStatus.FAILED, f"decryption: {why}")
    if opened or not refused:
        yield from exporter.restore(opened, reader, request)


def _choose(repo, snapshot_ref: str, source: str) -> tuple[Snapshot, list[SourceResult]]:
    """The snapshot named, or for `latest` the source's newest good backup and its failed runs
    since (docs/format.md section 9: a failed run is no recovery point)."""
    if snapshot_ref != "latest":
        return repo.find_snapshot(snapshot_ref), []
    snapshots = repo.snapshots()
    chosen = newest_good(snapshots, source)
    failed = failed_since(snapshots, source, chosen)
    if chosen is None:
        reason = failed[-1].failure() if failed else ""
        raise RepositoryError(f"{repo.description}: no snapshot is a good backup of source '{source}'"
                              + failed_runs(len(failed), reason, False))
    return chosen, failed
