"""`dr completion bash|zsh|fish`: a shell completion script generated from dr's parser
(dr.cli.completion)."""

from __future__ import annotations

import argparse
import sys

from dr.cli.arguments import CommandSpec, UsageError
from dr.cli.commands import help_of
from dr.cli.completion import SHELLS, script
from dr.cli.exitcodes import Exit
from dr.cli.output import Output, emit

EPILOG = ("bash: source <(dr completion bash), or write it to /etc/bash_completion.d/dr; zsh: "
          "source <(dr completion zsh) in ~/.zshrc; fish: dr completion fish > ~/.config/fish/completions/dr.fish")


def arguments(p: argparse.ArgumentParser) -> None:
    p.epilog = EPILOG
    p.add_argument("shell", choices=SHELLS, help="the shell to print the script for: bash, zsh or fish")


def run(args: argparse.Namespace, out: Output) -> int:
    if out.as_json:
        raise UsageError("dr completion prints a shell script, not a JSON document: run it without --json")
    # every command's arguments (dr's own parser, built whole); the entry point hands it over, as
    # it hands the demo its main, so no command module imports dr.cli.main
    emit(sys.stdout, script(args.shell, args.build_parser(None)))
    return Exit.OK


COMPLETION = CommandSpec("completion", help_of("completion"), arguments, run)
