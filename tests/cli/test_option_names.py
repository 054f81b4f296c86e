"""One name per option across commands (issue 31): a concept has one spelling in every command
that takes it; an old spelling stays for one release as a deprecated alias that warns on stderr
and leaves --json's stdout one document."""

from __future__ import annotations

import argparse
import json

from dr.cli.arguments import Renamed
from dr.cli.exitcodes import Exit
from dr.cli.main import build_parser, main
from tests.cli.planfiles import files_source, local_target, write_plan

# concept -> (dr's spelling, then the spellings other tools use for it that dr must not grow
# beside it: kubectl, restic, velero, helm); an old one of dr's own is allowed only as a Renamed
# action's deprecated alias.
CONCEPTS = {
    "where a report, page or rendering is written": ("--out", "--output", "--output-file", "--output-dir", "-o"),
    "machine-readable output": ("--json", "--output-json", "--machine-readable"),
    "the plan file": ("--plan", "--plan-file", "--config", "-c", "-f"),
    "which target repository": ("--target", "--repo", "--repository", "-r"),
    "which snapshot": ("--snapshot", "--snapshot-id", "--from-snapshot"),
    "which source": ("--source", "--sources", "--only"),
    "the age identity for secret content": ("--identity", "--identity-file", "--key-file", "--key"),
    "waiting for a lock": ("--lock-wait", "--retry-lock", "--wait"),
    "change nothing, show what would be done": ("--dry-run", "--noop", "-n"),
    "how many at once": ("--parallel", "--jobs", "--concurrency", "--workers", "-j"),
    "where to restore": ("--to", "--dest", "--destination", "--target-dir"),
    "a failure domain that is gone": ("--failed", "--fail", "--lost"),
    "the kubeconfig file": ("--kubeconfig", "--kube-config"),
    "the kubeconfig context": ("--context", "--kube-context"),
    "a Pushgateway to push metrics to": ("--pushgateway", "--push-gateway", "--push-url"),
    "the node-exporter metrics file": ("--metrics-file", "--textfile", "--metrics-out"),
}
# Values of a --format that repeat an option of their own (--json), kept as deprecated aliases.
DEPRECATED_CHOICES = {("dr audit", "--format", "json")}


def _parsers(parser: argparse.ArgumentParser, prog: str = "dr"):
    """(prog, parser) for the top level and every command and subcommand."""
    yield prog, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, command in action.choices.items():
                yield from _parsers(command, f"{prog} {name}")


def _actions():
    for prog, parser in _parsers(build_parser(None)):
        for action in parser._actions:
            yield prog, action


def test_every_concept_has_one_spelling_and_old_ones_are_deprecated_aliases():
    others = {other: spellings[0] for spellings in CONCEPTS.values() for other in spellings[1:]}
    seen = set()
    for prog, action in _actions():
        deprecated = set(action.option_strings[1:]) if isinstance(action, Renamed) else set()
        for option in action.option_strings:
            seen.add(option)
            if option in others:
                assert option in deprecated and action.option_strings[0] == others[option], (
                    f"{prog} {option}: dr spells this concept {others[option]} (keep {option} only as a "
                    "deprecated alias: action=Renamed)")
    assert not {spellings[0] for spellings in CONCEPTS.values()} - seen  # the table names what dr has


def test_no_format_value_repeats_the_json_option_unless_deprecated():
    repeated = {(prog, "--format", "json") for prog, action in _actions()
                if "--format" in action.option_strings and "json" in (action.choices or [])}
    assert repeated == DEPRECATED_CHOICES


def _scheduled_plan(tmp_path) -> str:
    (tmp_path / "cfg").mkdir()
    (tmp_path / "cfg" / "a.txt").write_text("a\n")
    return write_plan(tmp_path / "plan.yaml", local_target(tmp_path / "repo"),
                      files_source("config", [str(tmp_path / "cfg")]) + '    schedule: "0 3 * * *"\n')


def _run(capsys, argv: list[str]) -> tuple[int, str, str]:
    code = main(argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_deploy_output_still_works_warns_once_on_stderr_and_keeps_json_clean(tmp_path, capsys):
    plan = _scheduled_plan(tmp_path)
    code, out, err = _run(capsys, ["deploy", "render", "--plan", plan, "--image", "dr:test", "--json",
                                   "--output", str(tmp_path / "old.yaml")])
    assert code == Exit.OK and json.loads(out)["written"] == str(tmp_path / "old.yaml")
    warnings = [line for line in err.splitlines() if "deprecated" in line]
    assert warnings == ["warning: dr deploy --output is deprecated and will be removed in the next "
                        "release: use --out"]
    code, out, err = _run(capsys, ["deploy", "render", "--plan", plan, "--image", "dr:test", "-q",
                                   "--out", str(tmp_path / "new.yaml")])
    assert code == Exit.OK and "deprecated" not in err
    assert (tmp_path / "new.yaml").read_bytes() == (tmp_path / "old.yaml").read_bytes()


def test_audit_format_json_still_works_warns_and_prints_what_json_prints(tmp_path, capsys):
    plan = _scheduled_plan(tmp_path)
    assert main(["backup", "--plan", plan, "-q"]) == Exit.OK
    capsys.readouterr()
    code, old, err = _run(capsys, ["audit", "--plan", plan, "--format", "json", "-q"])
    assert code == Exit.OK and "warning: dr audit --format json is deprecated" in err and "use --json" in err
    code, new, err = _run(capsys, ["audit", "--plan", plan, "--json", "-q"])
    assert code == Exit.OK and "deprecated" not in err
    drop = lambda text: {k: v for k, v in json.loads(text).items() if k != "generated_at"}
    assert drop(old) == drop(new) and drop(new)["findings"] is not None
