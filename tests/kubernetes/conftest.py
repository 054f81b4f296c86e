"""Fixtures for the kubernetes exporter: emulated clusters, a real repository, the real pipeline."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import pyrage
import pytest

from dr.contract import ExportContext, Outcome, OutcomeStatus, RestoreRequest
from dr.exporters.kubernetes import KubernetesExporter
from dr.model.artifacts import Artifact
from dr.repository import names
from dr.repository.catalogs import read_catalog
from dr.repository.encryption import generate_identity
from dr.repository.reading import ArtifactReader
from dr.repository.repositories import Repository
from dr.repository.stores.local import LocalStore
from dr.repository.writing import SnapshotWriter
from tests.harness import EmulatedCluster, write_kubeconfig
from tests.kubernetes.upstream import populate

# The kinds every round trip exports besides the always-exported configuration.
WORKLOAD_KINDS = ["Deployment", "CronJob", "Service", "ValidatingWebhookConfiguration"]


@dataclass
class Backup:
    artifacts: list[Artifact]
    findings: list[dict]
    stats: dict
    log: list[str] = field(default_factory=list)

    def identities(self, kind: str = "kubernetes-objects") -> set[str]:
        return {a.identity for a in self.artifacts if a.kind == kind}


class Pipeline:
    """Repository(LocalStore) + SnapshotWriter + the exporter, as dr backup / dr restore run them."""

    def __init__(self, tmp_path, kubeconfig: str):
        self.root = str(tmp_path / "repository")
        self.repo = Repository(LocalStore(self.root))
        self.repo.init()
        self.kubeconfig = kubeconfig
        identity, self.recipient = generate_identity()
        self.identities = [pyrage.x25519.Identity.from_str(identity)]
        self.parent: list[Artifact] = []

    def options(self, **overrides):
        values = {"kubeconfig": self.kubeconfig, "context": "source", "workload_kinds": WORKLOAD_KINDS,
                  "list_timeout_seconds": 10, **overrides}
        return KubernetesExporter.Options(**values)

    def backup(self, options=None, **overrides) -> Backup:
        """options: the Options as given (the exporter's own defaults); else self.options(**overrides)."""
        log: list[str] = []
        context = ExportContext("cluster", options or self.options(**overrides), base_dir="/", log=log.append)
        writer = SnapshotWriter(self.repo, [self.recipient])
        try:
            sink = writer.source("cluster", "kubernetes", self.parent)
            KubernetesExporter(context).export(sink)
            result = sink.commit()
            result.findings = context.findings
            snapshot = writer.finish("plan", [result])
        finally:
            writer.close()
        self.parent = list(read_catalog(self.repo, snapshot.catalog))  # as the next dr backup reads it
        artifacts = names.open_all(self.parent, self.identities)  # as dr restore reads it (format.md 8.1)
        return Backup(artifacts, context.findings, dict(writer.stats), log)

    def restore(self, artifacts: list[Artifact], to: str | None = None, **request) -> list[Outcome]:
        context = ExportContext("cluster", self.options(), base_dir="/")
        reader = ArtifactReader(self.repo, self.identities)
        to = to if to is not None else f"{self.kubeconfig}:dest"
        return list(KubernetesExporter(context).restore(artifacts, reader, RestoreRequest(to=to, **request)))


def statuses(outcomes: list[Outcome]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for outcome in outcomes:
        counts[outcome.status.value] = counts.get(outcome.status.value, 0) + 1
    return counts


def failures(outcomes: list[Outcome]) -> list[str]:
    return [f"{o.status.value} {o.item}: {o.reason}" for o in outcomes
            if o.status not in (OutcomeStatus.RESTORED, OutcomeStatus.UNCHANGED, OutcomeStatus.SKIPPED)]


def _checked_stop(cluster: EmulatedCluster) -> None:
    errors = cluster.errors
    cluster.stop()
    assert errors == [], "the emulator hit internal errors:\n" + "\n".join(errors)


@pytest.fixture(scope="module")
def source():
    """The populated source cluster, shared by a module's tests (they only read it)."""
    cluster = EmulatedCluster(name="source").start()
    try:
        populate(cluster)
        yield cluster
    finally:
        _checked_stop(cluster)


@pytest.fixture
def dest():
    """An empty destination cluster per test."""
    cluster = EmulatedCluster(name="dest").start()
    try:
        yield cluster
    finally:
        _checked_stop(cluster)


@pytest.fixture
def kubeconfig(tmp_path, source, dest) -> str:
    return write_kubeconfig(os.path.join(tmp_path, "kubeconfig"), {"source": source, "dest": dest},
                            current="source")


@pytest.fixture
def pipeline(tmp_path, kubeconfig) -> Pipeline:
    return Pipeline(tmp_path, kubeconfig)
