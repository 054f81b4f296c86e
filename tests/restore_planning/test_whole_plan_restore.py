"""`dr restore` of a whole plan: blocked steps refused (and --force), remaps end to end, the journal."""

from __future__ import annotations

import json

from dr.cli.exitcodes import Exit
from tests.restore_planning.worlds import refs


def _json(capsys) -> dict:
    return json.loads(capsys.readouterr().out)


def _steps(doc: dict) -> dict[str, dict]:
    return {s["name"]: s for s in doc["steps"]}


def test_dry_run_refuses_the_step_that_would_write_into_the_failed_cluster(backed_up, capsys):
    w = backed_up
    code = w.dr(*w.restore_args("--to", f"config={w.root / 'out'}", "--dry-run", "--json"))
    doc = _json(capsys)
    assert code == Exit.BLOCKERS
    steps = _steps(doc)
    infra = steps["infra"]
    assert infra["status"] == "refused" and infra["verdict"] == "blocker"
    [blocker] = [n for n in infra["needs"] if n["verdict"] == "blocker"]
    assert blocker["kind"] == "destination" and blocker["reference"] == str(w.infra)
    assert "cloud/region-a/cluster-a" in blocker["reason"] and "lost when cluster-a (cluster) fails" in blocker["reason"]
    # The remapped remote goes to the surviving host, and that is what the plan says.
    declarations = steps["declarations"]
    assert declarations["status"] == "ready"
    assert declarations["destinations"][0]["to"] == str(w.github / "declarations.git")
    assert "plan remap git-remote" in declarations["destinations"][0]["how"]
    assert steps["config"]["status"] == "ready"
    # A dry run touches nothing and keeps no journal.
    assert not (w.github / "declarations.git").exists() and not (w.root / "out").exists()
    assert w.journal_files() == []


def test_force_runs_the_refused_step_and_the_journal_says_so(backed_up, capsys):
    w = backed_up
    code = w.dr(*w.restore_args("--to", f"config={w.root / 'out'}", "--force", "--dry-run", "--json"))
    infra = _steps(_json(capsys))["infra"]
    assert code == Exit.OK
    assert infra["status"] == "ready" and infra["forced"] and "forced past 1 blocker" in infra["reason"]

    assert w.dr(*w.restore_args("--to", f"config={w.root / 'out'}", "--force", "--json")) == Exit.OK
    run = _json(capsys)["run"]
    infra_result = next(s for s in run["steps"] if s["step"] == "infra")
    assert infra_result["status"] == "succeeded" and infra_result["forced"]
    record = json.loads(next(p for p in w.journal_files() if p.name.endswith("-infra.json")).read_text())
    assert record["forced"] is True and record["status"] == "succeeded"


def test_remapped_git_remote_restores_end_to_end_to_the_surviving_host(backed_up, capsys):
    """The declarations' Gitea is in the failed cluster; the plan remaps it to the surviving host."""
    w = backed_up
    wanted = refs(w.declarations)
    out = w.root / "out"
    code = w.dr(*w.restore_args("--to", f"config={out}", "--json"))
    doc = _json(capsys)
    assert code == Exit.BLOCKERS  # infra is refused: it would be pushed back into the failed cluster
    results = {s["step"]: s for s in doc["run"]["steps"]}
    assert results["declarations"]["status"] == "succeeded"
    assert results["declarations"]["counts"] == {"restored": 1}
    assert results["infra"]["status"] == "refused" and "lost when cluster-a" in results["infra"]["reason"]
    # The new remote holds exactly the backed-up refs: clone it and compare.
    assert refs(w.github / "declarations.git") == wanted
    clone = w.root / "clone"
    from tests.restore_planning.worlds import git
    git("clone", "--quiet", str(w.github / "declarations.git"), str(clone))
    assert (clone / "README").read_text() == "apps"
    assert (out / "config" / "values.yaml").read_text() == "replicas: 3\n"
    assert (out / "config" / "models" / "llama.json").exists()


def test_naming_a_destination_for_the_refused_step_resumes_and_finishes(backed_up, capsys):
    w = backed_up
    out = w.root / "out"
    assert w.dr(*w.restore_args("--to", f"config={out}", "-q")) == Exit.BLOCKERS
    capsys.readouterr()
    first = {p.name for p in w.journal_files()}
    code = w.dr(*w.restore_args("--to", f"config={out}", "--to", f"infra={w.github / 'infra.git'}", "--json"))
    doc = _json(capsys)
    assert code == Exit.OK
    run = doc["run"]
    assert run["resumed"] and run["run"] == 2 and run["finished"]
    earlier = {s["step"] for s in run["steps"] if s["earlier"]}
    assert earlier == {"declarations", "config"}  # succeeded in run 1: not redone
    assert refs(w.github / "infra.git") == refs(w.infra)
    # Run 2 only added objects: one run record, one step record (infra), one end record.
    added = {p.name for p in w.journal_files()} - first
    assert sorted(n.split("-", 1)[1] for n in added) == ["end.json", "infra.json", "run.json"]


def test_a_finished_restore_is_not_resumed_and_a_new_one_finds_everything_unchanged(backed_up, capsys):
    w = backed_up
    args = w.restore_args("--to", f"config={w.root / 'out'}", "--to", f"infra={w.github / 'infra.git'}")
    assert w.dr(*args, "-q") == Exit.OK
    capsys.readouterr()
    assert w.dr(*args, "--json") == Exit.OK
    run = _json(capsys)["run"]
    assert not run["resumed"] and run["run"] == 1
    assert all(s["counts"] == {"unchanged": s["counts"].get("unchanged")} for s in run["steps"])
    assert len({p.parent for p in w.journal_files()}) == 2


def test_unknown_failed_domain_and_bad_destination_are_usage_errors(backed_up, capsys):
    w = backed_up
    assert w.dr("restore", "--plan", w.plan, "--failed", "cluster-b", "--dry-run") == Exit.USAGE
    assert "did you mean 'cluster-a'" in capsys.readouterr().err
    assert w.dr("restore", "--plan", w.plan, "--to", "nosuch=/tmp/x", "--dry-run") == Exit.USAGE
    assert "SOURCE=DEST" in capsys.readouterr().err
    assert w.dr("restore", "--plan", w.plan, "--source", "config", "--failed", "cluster-a") == Exit.USAGE


def test_single_source_restore_still_works_with_and_without_the_source_prefix(backed_up, capsys):
    w = backed_up
    out = w.root / "single"
    assert w.dr("restore", "--plan", w.plan, "--source", "config", "--to", str(out), "-q") == Exit.OK
    assert (out / "config" / "values.yaml").exists()
    out2 = w.root / "single2"
    assert w.dr("restore", "--plan", w.plan, "--source", "config", "--to", f"config={out2}", "-q") == Exit.OK
    assert (out2 / "config" / "values.yaml").exists()
