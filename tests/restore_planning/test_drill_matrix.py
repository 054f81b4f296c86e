"""`dr drill --matrix`: one drill per protected failure domain, measured RPO/RTO in one table; `--history --matrix`."""

from __future__ import annotations

import json

import yaml

from dr.cli.exitcodes import Exit
from dr.drills.history import read_history
from tests.restore_planning.worlds import refs

SCENARIOS = ["cluster-a", "cluster-b", "region-a"]
# the world keeps the cluster's secrets in a secret-store location inside cluster-a: the matrix
# drills its loss too (tests/restore_planning/test_location_loss.py)
ALL = SCENARIOS + ["kind:secret-store"]


def _three_domains(w) -> str:
    """The world's plan, protecting three domains: cluster-a, a second cluster beside it, region-a."""
    data = w.plan_data()
    data["failure_domains"][0]["children"][0]["children"].append({"name": "cluster-b", "kind": "cluster"})
    data["protects_against"] = SCENARIOS
    path = w.root / "plan-matrix.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return str(path)


def _matrix(w, capsys, plan: str, *extra: str) -> tuple[int, dict]:
    capsys.readouterr()
    code = w.dr("drill", "--plan", plan, "--matrix", "--identity", str(w.identity_file), "--json", *extra)
    return code, json.loads(capsys.readouterr().out)


def test_the_matrix_drills_every_protected_domain_into_its_own_scratch_folder(backed_up, capsys):
    w = backed_up
    plan = _three_domains(w)
    scratch = w.root / "scratch"
    code, result = _matrix(w, capsys, plan, "--to", str(scratch))
    assert code == Exit.OK
    assert result["scenarios"] == ALL and [r["scenario"] for r in result["rows"]] == ALL
    for scenario, row, record in zip(ALL, result["rows"], result["drills"]):
        assert record["failed"] == [scenario] and record["matrix"] == {"id": result["id"], "scenarios": ALL}
        assert (row["result"], row["verified"], row["steps"]) == ("recovered", 3, 3)
        assert row["rto_seconds"] == record["rto"]["total_seconds"] > 0
        assert row["phases"] == record["rto"]["phases"] and list(row["phases"]) == ["audit", "plan", "restore", "verify"]
        assert 0 < row["rpo_seconds"] == record["rpo_seconds"]
        folder = scenario.replace(":", "_")
        assert refs(scratch / folder / "declarations" / "declarations.git") == refs(w.declarations)
    # every drill is in the history, each once, tagged with the matrix
    stored = [r for r in read_history(w.repository()) if (r.get("matrix") or {}).get("id") == result["id"]]
    assert sorted(r["id"] for r in stored) == sorted(r["id"] for r in result["drills"])


def test_the_table_and_the_history_show_each_matrix_run(backed_up, capsys):
    w = backed_up
    plan = _three_domains(w)
    assert w.dr("drill", "--plan", plan, "--matrix", "--to", str(w.root / "s1"),
                "--identity", str(w.identity_file)) == Exit.OK
    table = capsys.readouterr().out
    assert "drill matrix" in table and "4 scenario(s)" in table
    lines = [line for line in table.splitlines() if line.strip().startswith(tuple(ALL))]
    assert [line.split()[0] for line in lines] == ALL and all("recovered" in line for line in lines)
    # a single drill between matrix runs is not part of any matrix
    assert w.dr("drill", "--plan", plan, "--failed", "cluster-a", "--to", str(w.root / "single"),
                "--identity", str(w.identity_file), "-q") == Exit.OK
    code, second = _matrix(w, capsys, plan, "--to", str(w.root / "s2"))
    assert code == Exit.OK
    assert w.dr("drill", "--plan", plan, "--history", "--matrix", "--json") == Exit.OK
    history = json.loads(capsys.readouterr().out)["matrices"]
    assert len(history) == 2 and history[-1]["id"] == second["id"]
    assert all([r["scenario"] for r in m["rows"]] == ALL for m in history)
    assert w.dr("drill", "--plan", plan, "--history", "--matrix") == Exit.OK
    text = capsys.readouterr().out
    assert "2 drill matrix run(s)" in text and text.count("region-a ") >= 2


def test_a_failing_scenario_does_not_stop_the_others_and_sets_the_exit_code(world, capsys):
    w = world
    w.backup()
    plan = _three_domains(w)
    not_a_folder = w.root / "occupied"
    not_a_folder.write_text("a file where the config should go")
    code, result = _matrix(w, capsys, plan, "--to", str(w.root / "scratch"), "--to", f"config={not_a_folder}")
    assert code == Exit.PARTIAL
    assert [r["scenario"] for r in result["rows"]] == ALL
    assert {r["result"] for r in result["rows"]} == {"partial"}
    assert all(r["verified"] == 2 and r["steps"] == 3 for r in result["rows"])


def test_matrix_usage_errors(backed_up, capsys):
    w = backed_up
    assert w.dr("drill", "--plan", w.plan, "--matrix", "--failed", "cluster-a", "--to", "x") == Exit.USAGE
    assert w.dr("drill", "--plan", w.plan, "--matrix") == Exit.USAGE
    assert "--to SCRATCH" in capsys.readouterr().err
