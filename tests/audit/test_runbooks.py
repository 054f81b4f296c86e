"""Every finding code and every incident has a runbook with every section, using real dr commands."""

from __future__ import annotations

import os
import re

import pytest

from dr.audit.declared import declared
from dr.audit.findings import CODES, runbook_for
from dr.cli.main import build_parser

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SECTIONS = [
    "What this means",
    "First command",
    "Safe actions and actions needing approval",
    "Checkpoints and rollback points",
    "Isolation and recovery",
    "When to escalate",
    "Keep for the review",
]
INCIDENTS = ["cluster-loss", "region-loss", "stale-backup", "registry-in-failed-domain",
             "secret-store-in-failed-domain", "incomplete-checkpoint", "partial-restore-failure",
             "vault-lost-with-cluster", "checkpoint-not-resumable", "checkpoint-unversioned",
             "spot-save-exceeds-notice", "verify-problems", "dr-job-not-reporting", "damaged-snapshot",
             "training-resume-failed"]
declared()  # the built-in exporters' codes (Exporter.finding_codes) have runbooks here too
RUNBOOKS = sorted({runbook_for(code) for code in CODES} | {f"runbooks/{name}.md" for name in INCIDENTS})


def read(path: str) -> str:
    full = os.path.join(ROOT, path)
    assert os.path.exists(full), f"{path} is missing"
    with open(full, encoding="utf-8") as handle:
        return handle.read()


@pytest.mark.parametrize("path", RUNBOOKS)
def test_runbook_has_every_section_in_order_with_content(path):
    text = read(path)
    headings = re.findall(r"^## (.+)$", text, flags=re.M)
    assert headings == SECTIONS, f"{path}: sections {headings}, expected {SECTIONS}"
    bodies = re.split(r"^## .+$", text, flags=re.M)[1:]
    for heading, body in zip(SECTIONS, bodies):
        assert len(body.split()) >= 20, f"{path}: section '{heading}' is too thin to act on"


@pytest.mark.parametrize("path", RUNBOOKS)
def test_first_command_is_a_dr_command(path):
    first = re.split(r"^## ", read(path), flags=re.M)[2]
    assert re.search(r"(^|`)dr (audit|snapshots|backup|restore|verify)\b", first, flags=re.M), path


def dr_invocations(text: str) -> list[str]:
    fenced = [line for block in re.findall(r"```sh\n(.*?)```", text, flags=re.S)
              for line in block.splitlines() if line.startswith("dr ")]
    inline = re.findall(r"`(dr [a-z][^`]*)`", text)
    return fenced + inline


@pytest.fixture(scope="module")
def subcommands():
    return build_parser()._subparsers._group_actions[0].choices


@pytest.mark.parametrize("path", RUNBOOKS)
def test_runbooks_use_only_real_commands_and_options(path, subcommands):
    calls = dr_invocations(read(path))
    assert calls, f"{path} names no dr command"
    for call in calls:
        name = call.split()[1]
        assert name in subcommands, f"{path}: 'dr {name}' is not a dr command ({call})"
        options = set(subcommands[name]._option_string_actions)
        for option in re.findall(r"(?<![\w-])(--[a-z][a-z-]*)", call):
            assert option in options, f"{path}: 'dr {name}' has no option {option} ({call})"


def test_every_code_has_a_runbook_listed_in_the_index():
    index = read("runbooks/README.md")
    for code in CODES:
        assert f"({code}.md)" in index, f"runbooks/README.md does not list {code}"
