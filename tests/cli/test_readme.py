"""The README stays true: its exit-code table and command list match the code."""

from __future__ import annotations

import argparse
import os
import re

from dr.cli.main import global_args as output_args
from dr.cli.commands import COMMANDS
from dr.cli.exitcodes import MEANINGS

README = os.path.join(os.path.dirname(__file__), "..", "..", "README.md")


def _readme() -> str:
    with open(README, encoding="utf-8") as handle:
        return handle.read()


def test_exit_code_table_matches_the_code():
    rows = dict(re.findall(r"^\| (\d+) \| (.+?) \|$", _readme(), flags=re.M))
    assert {int(k): v for k, v in rows.items()} == {int(k): v for k, v in MEANINGS.items()}


def test_every_command_is_in_the_readme():
    text = _readme()
    for spec in COMMANDS:
        assert f"`dr {spec.name}" in text, spec.name


def test_every_option_all_commands_share_is_in_the_readme():
    parser = argparse.ArgumentParser()
    output_args(parser)
    text = _readme()
    for option in parser._option_string_actions:
        if option.startswith("--") and option != "--help":
            assert f"`{option}`" in text or f"/{option}`" in text, option


def test_setup_is_exactly_two_commands_and_ci_runs_the_test_one():
    block = re.search(r"## Set-up.*?```sh\n(.*?)```", _readme(), flags=re.S).group(1)
    lines = [ln.split("#")[0].strip() for ln in block.strip().splitlines()]
    assert lines == ["./scripts/demo", "./scripts/test"]
    with open(os.path.join(os.path.dirname(README), ".ci", "run"), encoding="utf-8") as handle:
        assert "scripts/test" in handle.read()
