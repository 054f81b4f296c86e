"""Contract v2: an exporter that reads_plan_dependencies runs after the other sources and sees
the dependencies of what they wrote in this backup, or, for a source not exported now, what its
newest snapshot recorded. Real backups into a real repository; the exporters are test plugins
(tests/plugins) loaded through the registry as any plugin is."""

from __future__ import annotations

import json
from importlib.metadata import EntryPoint

import yaml

from dr.backup import run_backup
from dr.contract.registry import GROUP, Registry
from dr.model.plan_loading import load_plan
from dr.repository.catalogs import read_catalog
from dr.repository.reading import ArtifactReader
from dr.repository.targets import open_target

REGISTRY = Registry([EntryPoint("tables", "tests.plugins.acme_tables:TablesExporter", GROUP),
                     EntryPoint("inventory", "tests.plugins.acme_inventory:InventoryExporter", GROUP)])


def _plan(tmp_path, endpoint: str, folder: str = "tables"):
    (tmp_path / "tables").mkdir(exist_ok=True)
    (tmp_path / "tables" / "users.json").write_text(json.dumps({"endpoint": endpoint}))
    data = {"version": 1, "name": "deps",
            "failure_domains": [{"name": "a", "kind": "site"}, {"name": "b", "kind": "site"}],
            "protects_against": ["a"], "targets": [{"name": "dr", "url": str(tmp_path / "repo"), "domain": "b"}],
            # the reader comes first in the plan: the backup still runs it last
            "sources": [{"name": "inventory", "type": "inventory"},
                        {"name": "features", "type": "tables", "folder": folder, "endpoint": endpoint}]}
    (tmp_path / "plan.yaml").write_text(yaml.safe_dump(data))
    return load_plan(str(tmp_path / "plan.yaml"), REGISTRY)


def _inventory(plan, result) -> list:
    repo = open_target(plan, plan.target("dr"))
    [artifact] = [a for a in read_catalog(repo, result.snapshot.catalog) if a.source == "inventory"]
    return json.loads(ArtifactReader(repo).read(artifact))


def test_a_reader_sees_what_the_sources_before_it_wrote_in_this_backup(tmp_path):
    plan = _plan(tmp_path, "https://fs-1.example/api")
    [result] = run_backup(plan, REGISTRY)
    assert [s.name for s in result.sources] == ["inventory", "features"]  # results stay in plan order
    assert _inventory(plan, result) == [["table-endpoint", "https://fs-1.example/api", ["features"]]]


def test_a_source_not_exported_now_counts_as_its_newest_snapshot_recorded_it(tmp_path):
    plan = _plan(tmp_path, "https://fs-1.example/api")
    run_backup(plan, REGISTRY)
    # the source changes, but only the reader is backed up: it sees the snapshot's record
    plan = _plan(tmp_path, "https://fs-2.example/api")
    [result] = run_backup(plan, REGISTRY, ["inventory"])
    assert _inventory(plan, result) == [["table-endpoint", "https://fs-1.example/api", ["features"]]]
    # a source that fails now also counts as its newest snapshot recorded it
    plan = _plan(tmp_path, "https://fs-2.example/api", folder="gone")
    [result] = run_backup(plan, REGISTRY)
    assert [s.ok for s in result.sources] == [True, False]
    assert _inventory(plan, result) == [["table-endpoint", "https://fs-1.example/api", ["features"]]]


def test_the_ledger_keeps_the_distinct_details_bounded():
    from dr.backup.dependencies import DependencyLedger
    from dr.contract import DETAILS_KEPT
    from dr.model.artifacts import Artifact, Dependency, Sensitivity

    def artifact(source: str, *details: str) -> Artifact:
        return Artifact(source, "x", "k", source, 0, Sensitivity.INTERNAL, dependencies=[
            Dependency("helm-chart", "https://charts.example/web:1.0.0", d) for d in details])

    ledger = DependencyLedger()
    ledger.record([artifact("platform", "helm release a/web v1", "helm release a/web v1", "helm release b/web v4"),
                   artifact("argo", "")])
    [dep] = ledger.dependencies()
    assert dep.sources == ("platform", "argo")
    assert dep.details == ("helm release a/web v1", "helm release b/web v4")
    ledger.record([artifact("many", *(f"helm release n{i}/web v1" for i in range(DETAILS_KEPT * 2)))])
    assert len(ledger.dependencies()[0].details) == DETAILS_KEPT
