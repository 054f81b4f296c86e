"""What scripts and people expect of a CLI (issue 31): global options before or after the
command, DR_PLAN / DR_JSON / DR_QUIET under the command line, a JSON error for every failure
under --json, read-only commands that create nothing, `dr version`, and every option with help
text and documented in the README's command table."""

from __future__ import annotations

import argparse
import json
import os
import re
import sys

import pytest

from dr import __version__
from dr.cli.exitcodes import Exit
from dr.cli.main import build_parser, main
from tests.cli.planfiles import files_source, local_target, write_plan

README = os.path.join(os.path.dirname(__file__), "..", "..", "README.md")
GLOBAL = {"help", "json", "quiet", "debug", "kubeconfig", "context"}


@pytest.fixture
def plan(tmp_path) -> str:
    (tmp_path / "cfg").mkdir()
    (tmp_path / "cfg" / "a.txt").write_text("a\n")
    (tmp_path / "etc").mkdir()
    return write_plan(tmp_path / "plan.yaml", local_target(tmp_path / "repo"),
                      files_source("config", [str(tmp_path / "cfg")]) + '    schedule: "0 3 * * *"\n' +
                      files_source("etc", [str(tmp_path / "etc")]))


def _run(capsys, argv: list[str]) -> tuple[int, str, str]:
    code = main(argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_global_options_go_before_or_after_the_command(plan, capsys):
    assert main(["backup", "--plan", plan, "-q"]) == Exit.OK
    capsys.readouterr()
    before = _run(capsys, ["--json", "snapshots", "--plan", plan])
    after = _run(capsys, ["snapshots", "--plan", plan, "--json"])
    assert before == after and before[0] == Exit.OK
    document = json.loads(before[1])
    assert document["schema_version"] == 1 and len(document["snapshots"]) == 1
    assert _run(capsys, ["-q", "--json", "plugins"])[1] == _run(capsys, ["plugins", "--json", "-q"])[1]


@pytest.mark.parametrize("argv, code, kind", [
    (["snapshots", "--plan", "{plan}", "--json"], Exit.FAILURE, "failure"),  # no repository yet
    (["--json", "snapshots", "--plan", "{plan}", "--target", "nowhere"], Exit.USAGE, "usage"),
    (["--json", "snapshots", "--plan", "{plan}", "--no-such-option"], Exit.USAGE, "usage"),
    (["--json", "snapshots"], Exit.USAGE, "usage"),  # no --plan and no DR_PLAN
    (["--json", "no-such-command"], Exit.USAGE, "usage"),
    (["--json", "snapshots", "--plan", "{missing}"], Exit.USAGE, "plan"),
    (["demo", "--dir", "{missing}", "--json"], Exit.USAGE, "usage"),  # a walkthrough's text, not a document
    (["--json", "completion", "bash"], Exit.USAGE, "usage"),  # a shell script, not a document
])
def test_every_failure_under_json_prints_a_json_error(plan, tmp_path, capsys, monkeypatch, argv, code, kind):
    monkeypatch.delenv("DR_PLAN", raising=False)
    argv = [a.format(plan=plan, missing=tmp_path / "missing.yaml") for a in argv]
    monkeypatch.setattr(sys, "argv", ["dr", *argv])
    try:
        got, out, err = _run(capsys, argv)
    except SystemExit as stopped:  # argparse's own usage errors
        got, (out, err) = stopped.code, capsys.readouterr()
    document = json.loads(out)
    assert got == code
    assert document["schema_version"] == 1
    assert (document["error"]["exit_code"], document["error"]["kind"]) == (code, kind)
    assert document["error"]["message"] and "Traceback" not in err


def test_dr_plan_dr_json_and_dr_quiet_stand_in_for_the_options(plan, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("DR_PLAN", plan)
    monkeypatch.setenv("DR_QUIET", "1")
    code, out, err = _run(capsys, ["backup"])
    assert code == Exit.OK and err == ""
    monkeypatch.setenv("DR_JSON", "true")
    code, out, _ = _run(capsys, ["snapshots"])
    assert code == Exit.OK and len(json.loads(out)["snapshots"]) == 1
    # the command line wins: --plan over DR_PLAN
    other = write_plan(tmp_path / "other.yaml", local_target(tmp_path / "elsewhere"),
                       files_source("config", [str(tmp_path / "cfg")]))
    code, out, _ = _run(capsys, ["snapshots", "--plan", other])
    assert code == Exit.FAILURE and "elsewhere" in json.loads(out)["error"]["message"]


def test_a_wrong_boolean_in_the_environment_is_a_usage_error_naming_it(plan, capsys, monkeypatch):
    monkeypatch.setenv("DR_JSON", "maybe")
    with pytest.raises(SystemExit) as stopped:
        main(["snapshots", "--plan", plan])
    assert stopped.value.code == Exit.USAGE and "DR_JSON='maybe'" in capsys.readouterr().err


def test_read_only_commands_create_no_missing_target_directory(plan, tmp_path, capsys):
    for argv in (["snapshots"], ["verify"], ["status"], ["audit", "--failed", "cluster-a"], ["unlock"],
                 ["prune", "--dry-run"]):
        code, _, err = _run(capsys, [*argv, "--plan", plan])
        assert code != Exit.OK or argv == ["status"], (argv, err)
        assert not (tmp_path / "repo").exists(), argv
    assert main(["backup", "--plan", plan, "-q"]) == Exit.OK and (tmp_path / "repo" / "config").is_file()


def test_snapshots_of_one_source_and_the_latest(plan, tmp_path, capsys):
    for sources in (["config"], ["etc"], ["config"]):
        assert main(["backup", "--plan", plan, "-q", *[a for s in sources for a in ("--source", s)]]) == Exit.OK
    capsys.readouterr()
    every = json.loads(_run(capsys, ["snapshots", "--plan", plan, "--json"])[1])["snapshots"]
    config = json.loads(_run(capsys, ["snapshots", "--plan", plan, "--json", "--source", "config"])[1])["snapshots"]
    latest = json.loads(_run(capsys, ["snapshots", "--plan", plan, "--json", "--source", "etc", "--latest"])[1])
    assert len(every) == 3 and [s["id"] for s in config] == [every[0]["id"], every[2]["id"]]
    assert [s["id"] for s in latest["snapshots"]] == [every[1]["id"]]


def test_version_names_the_format_contract_python_and_exporters(capsys):
    with pytest.raises(SystemExit) as stopped:
        main(["--version"])
    line = capsys.readouterr().out
    assert stopped.value.code == 0
    assert line.startswith(f"dr {__version__} (repository format 1, Python 3.")
    code, out, _ = _run(capsys, ["version", "--json"])
    document = json.loads(out)
    assert code == Exit.OK and document["dr"] == __version__ and document["repository_format"] == 1
    assert {"files", "git", "kubernetes"} <= {e["name"] for e in document["exporters"]}
    assert all(e["contract_version"] in document["exporter_contracts_supported"] for e in document["exporters"])


def _commands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser(None)
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


def test_every_option_has_help_text_and_is_in_the_readme_command_table():
    with open(README, encoding="utf-8") as handle:
        rows = [line for line in handle.read().splitlines() if line.startswith("| `dr ")]
    for name, command in _commands().items():
        row = " ".join(r for r in rows if r.startswith(f"| `dr {name}"))
        assert row, f"README's command table has no row for dr {name}"
        for action in command._actions:
            if action.dest in GLOBAL:
                continue
            assert action.help, f"dr {name} {action.option_strings or action.dest}: no help text"
            spelled = [o for o in action.option_strings if o.startswith("--")] or \
                list(action.choices or []) or [action.metavar]
            for word in spelled:
                assert re.search(rf"(?<![\w-]){re.escape(word)}(?![\w-])", row), f"dr {name} {word}: not in the README"


def _documented_keys() -> dict[str, set[str]]:
    with open(os.path.join(os.path.dirname(README), "docs", "json.md"), encoding="utf-8") as handle:
        text = handle.read()
    table = text.split("## The commands' documents", 1)[1]
    return {command: set(re.findall(r"`(\w+)`", keys)) | {"schema_version"}
            for command, keys in re.findall(r"^\| `dr ([a-z -]+)` \| (.+) \|$", table, flags=re.M)}


def _documented_runs(plan: str, tmp_path) -> dict[str, list[str]]:
    """What each row of docs/json.md's table runs beyond its own words, on the fixture's plan."""
    both = lambda name: ["--to", f"config={tmp_path / name / 'config'}", "--to", f"etc={tmp_path / name / 'etc'}"]
    return {"plan validate": [plan], "restore --dry-run": both("planned"), "restore": both("restored"),
            "restore --source": ["config", "--to", str(tmp_path / "one")],
            "drill": ["--failed", "cluster-a", "--to", str(tmp_path / "drill")],
            "drill --matrix": ["--to", str(tmp_path / "matrix")], "deploy render": ["--image", "dr:test"]}


def test_the_documents_have_the_keys_docs_json_md_lists(plan, tmp_path, capsys, monkeypatch):
    """Every command's row, from a real run of it (restores, drills and a rendering included)."""
    monkeypatch.setenv("DR_PLAN", plan)
    documented = _documented_keys()
    runs = _documented_runs(plan, tmp_path)
    assert main(["backup", "-q"]) == Exit.OK
    capsys.readouterr()
    for command, keys in documented.items():
        code, out, err = _run(capsys, [*command.split(), *runs.get(command, []), "--json"])
        document = json.loads(out)
        assert set(document) == keys, (command, code, err, sorted(document))
    assert {c.split()[0] for c in documented} == set(_commands()) - {"demo", "completion"}
    assert set(runs) <= set(documented)


def test_version_option_stays_as_cheap_as_help():
    """`dr --version` imports no pydantic (the exporter contract is `dr version`'s)."""
    import subprocess

    code = ("import sys, json\nfrom dr.cli.main import main\ntry:\n    main(['--version'])\nexcept SystemExit:\n"
            "    pass\nprint(json.dumps(sorted(m for m in sys.modules if m.startswith(('pydantic', 'dr.exporters')))))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.strip().splitlines()[-1]) == []
