"""Round trips through a real repository: export into a snapshot, read its catalog, restore."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import pytest

from dr.contract import ExportContext, Outcome, OutcomeStatus, RestoreRequest
from dr.model.artifacts import Artifact, Sensitivity
from dr.model.snapshots import Snapshot
from dr.repository import names
from dr.repository.catalogs import read_catalog
from dr.repository.reading import ArtifactReader
from dr.repository.repositories import Repository
from dr.repository.stores.local import LocalStore
from dr.repository.writing import SnapshotWriter


@dataclass
class Backup:
    snapshot: Snapshot
    artifacts: list[Artifact]
    stats: dict
    findings: list[dict] = field(default_factory=list)

    def by_identity(self) -> dict[str, Artifact]:
        return {a.identity: a for a in self.artifacts}


class Harness:
    """A repository under tmp_path and helpers that drive an exporter through it."""

    def __init__(self, root: str):
        self.root = root
        self.repo = Repository(LocalStore(root))
        self.repo.init()
        self.identities: list = []  # opens the sealed names of what backup() returns (format.md 8.1)
        self._stored: dict[int, tuple[Artifact, Artifact]] = {}

    def backup(self, exporter_cls, options: dict, *, base_dir: str, parent: list[Artifact] = (),
               recipients: list[str] = (), sensitivity: Sensitivity | None = None,
               source: str = "src", wrap_sink=None, identities: list | None = None) -> Backup:
        """The artifacts as a restore with `identities` (else self.identities) reads them; as
        `parent`, they are handed to the sink as the next dr backup reads them: sealed."""
        parent = [self._stored.get(id(a), (a, a))[1] for a in parent]
        writer = SnapshotWriter(self.repo, list(recipients))
        context = ExportContext(source=source, options=exporter_cls.Options(**options),
                                base_dir=base_dir, sensitivity=sensitivity, seal_name=writer.names.name)
        try:
            sink = writer.source(source, exporter_cls.type_name, parent)
            exporter_cls(context).export(wrap_sink(sink) if wrap_sink else sink)
            result = sink.commit()
            result.findings = context.findings
            snapshot = writer.finish("plan", [result])
        finally:
            writer.close()
        stored = list(read_catalog(self.repo, snapshot.catalog))
        opened = names.open_all(stored, list(identities or self.identities))
        self._stored.update((id(o), (o, s)) for o, s in zip(opened, stored))
        return Backup(snapshot, opened, dict(writer.stats), context.findings)

    def restore(self, exporter_cls, options: dict, artifacts: list[Artifact], *, identities=None,
                base_dir: str = "/nonexistent", **request) -> list[Outcome]:
        context = ExportContext(source="src", options=exporter_cls.Options(**options), base_dir=base_dir)
        reader = ArtifactReader(self.repo, identities)
        return list(exporter_cls(context).restore(artifacts, reader, RestoreRequest(**request)))

    def blob_path(self, digest: str) -> str:
        return os.path.join(self.root, "blobs", digest[:2], digest)

    def stored_bytes(self) -> bytes:
        """Every byte the repository holds, to scan for plaintext."""
        out = bytearray()
        for dirpath, _, files in os.walk(self.root):
            for name in files:
                with open(os.path.join(dirpath, name), "rb") as handle:
                    out += handle.read()
        return bytes(out)


@pytest.fixture
def harness(tmp_path) -> Harness:
    return Harness(str(tmp_path / "repo"))


def statuses(outcomes: list[Outcome]) -> dict[str, OutcomeStatus]:
    return {o.item: o.status for o in outcomes}
