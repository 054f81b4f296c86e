"""A new exporter is one package plus an entry point (contract v2).

tests/plugins/acme_tables is written as a third party would write it, and installed as a
distribution. It brings its own remap kind, ordering role and rule, and default destination;
dr validates its plan, plans and runs a whole-plan restore, and audits it, with no edit to dr.
Real backup, repository, restore and audit; the feature store is only a URL in the tables
(nothing is served), because dr never contacts a dependency: it judges where it is placed.
"""

from __future__ import annotations

import json

import pytest
import yaml

from dr.cli.exitcodes import Exit
from dr.cli.main import main
from dr.model.plan_loading import PlanError, load_plan
from tests.plugins.installing import install_distribution
from tests.restore_planning.worlds import World

LOST_STORE = "https://features.cluster-a.internal"
SURVIVING_STORE = "https://features.region-b.example.com"


@pytest.fixture
def installed(tmp_path, monkeypatch):
    site = tmp_path / "site"
    install_distribution(site, "acme_tables", {"tables": "tests.plugins.acme_tables:TablesExporter"})
    monkeypatch.syspath_prepend(str(site))
    return site


@pytest.fixture
def world(tmp_path) -> World:
    w = World(tmp_path / "platform")
    tables = w.root / "data" / "tables"
    tables.mkdir(parents=True)
    (tables / "users.json").write_text(json.dumps({"endpoint": f"{LOST_STORE}/api", "rows": 3}))
    w.sources = [{"name": "config", "type": "files", "paths": [str(w.config)]},
                 {"name": "features", "type": "tables", "folder": str(tables), "endpoint": f"{LOST_STORE}/api"}]
    w.remaps = [{"kind": "table-endpoint", "old": LOST_STORE, "new": SURVIVING_STORE,
                 "reason": "the feature store is replicated to region-b"}]
    w.tables = tables
    return w


def _plan(w: World) -> str:
    data = w.plan_data()
    data["locations"].append({"name": "features-b", "domain": "region-b", "hosts": ["features.region-b.example.com"]})
    path = w.root / "plan.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return str(path)


def _json(capsys) -> dict:
    return json.loads(capsys.readouterr().out)


def test_without_the_plugin_its_type_and_remap_kind_are_plan_errors(world):
    from dr.contract.registry import Registry

    with pytest.raises(PlanError) as err:
        load_plan(_plan(world), Registry())
    fields = {p.path for p in err.value.problems}
    assert "sources[1].type" in fields and "restore.remaps[0].kind" in fields


def test_a_whole_plan_restore_uses_its_remap_kind_role_and_destination(installed, world, capsys):
    plan = _plan(world)
    assert main(["plugins", "--json"]) == Exit.OK
    tables = next(p for p in _json(capsys)["exporters"] if p["name"] == "tables")
    assert (tables["contract_version"], tables["remap_kinds"]) == (2, ["table-endpoint"])
    assert main(["backup", "--plan", plan, "-q"]) == Exit.OK
    capsys.readouterr()
    args = ["restore", "--plan", plan, "--failed", "cluster-a", "--identity", str(world.identity_file),
            "--to", f"config={world.root / 'out'}", "--json"]
    assert main([*args, "--dry-run"]) == Exit.OK
    steps = {s["name"]: s for s in _json(capsys)["steps"]}
    features, config = steps["features"], steps["config"]
    # its ordering rule: feature tables before the files step, with the plugin's reason
    assert features["level"] < config["level"]
    assert any(a["step"] == "features" and "feature tables before" in a["why"] for a in config["after"])
    # its remap kind: the lost endpoint is judged at its new place, and restore() hears it
    [need] = [n for n in features["needs"] if n["kind"] == "table-endpoint"]
    assert need["verdict"] == "remapped" and "plan remap table-endpoint" in need["reason"]
    assert "region-b" in need["reason"]
    [unit] = features["destinations"]
    assert unit["to"] == str(world.tables) and unit["how"] == "where the tables came from"
    assert unit["remap"] == {f"endpoint:{LOST_STORE}": SURVIVING_STORE}
    # the real restore: the table comes back served by the surviving store
    (world.tables / "users.json").unlink()
    assert main(args) == Exit.OK
    run = _json(capsys)["run"]
    assert [s["step"] for s in run["steps"]] == ["features", "config"]
    assert json.loads((world.tables / "users.json").read_text()) == {"endpoint": f"{SURVIVING_STORE}/api",
                                                                      "rows": 3}


def test_the_audit_judges_its_dependencies_with_no_core_edit(installed, world, capsys, tmp_path):
    plan = _plan(world)
    assert main(["backup", "--plan", plan, "-q"]) == Exit.OK
    report = tmp_path / "audit.json"
    code = main(["audit", "--plan", plan, "--failed", "cluster-a", "--json", "--out", str(report), "-q"])
    # the plan remaps the lost endpoint with the plugin's own remap kind: the audit applies the
    # restore's rewrite and gives the restore plan's answer (remapped), not a blocker
    assert code == Exit.OK
    findings = json.loads(report.read_text())["findings"]
    [moved] = [f for f in findings if f["kind"] == "table-endpoint"]
    assert moved["severity"] == "info" and moved["code"] == "dependency-remapped" and moved["sources"] == ["features"]
    assert moved["reference"] == f"{LOST_STORE}/api" and moved["domain"] == "cluster-a"
    assert "plan remap table-endpoint" in moved["message"] and SURVIVING_STORE in moved["message"]
    world.remaps = [{"kind": "table-endpoint", "old": LOST_STORE, "new": "https://replica.cluster-a.internal"}]
    code = main(["audit", "--plan", _plan(world), "--failed", "cluster-a", "--json", "--out", str(report), "-q"])
    [lost] = [f for f in json.loads(report.read_text())["findings"] if f["kind"] == "table-endpoint"]
    assert code == Exit.BLOCKERS and lost["severity"] == "blocker" and "lost as well" in lost["message"]
    world.remaps = []  # without the remap, the same dependency is the blocker it is
    code = main(["audit", "--plan", _plan(world), "--failed", "cluster-a", "--json", "--out", str(report), "-q"])
    [lost] = [f for f in json.loads(report.read_text())["findings"] if f["kind"] == "table-endpoint"]
    assert code == Exit.BLOCKERS and lost["severity"] == "blocker"
