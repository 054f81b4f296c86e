"""The registry of dr's commands, in the order `dr --help` shows them. dr.cli.main builds its
parser from COMMANDS and nothing else.

Each command is a module, imported only when that command runs (`dr backup` never imports the
audit, restore or drill code, nor what they import; `dr --help` imports none): a cron backup
pays for what it uses. The help line lives here, so the listing needs no module. A new
command is a module dr/cli/commands/<name>.py defining `<NAME> = CommandSpec(...)`, and its
line in _HELP below.

A command module parses its arguments, calls the library, prints, and picks the exit code. It
imports dr.cli.arguments, dr.cli.output, dr.cli.exitcodes and the library, never another
command module (import-linter holds them independent).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass


@dataclass(frozen=True)
class Command:
    name: str
    help: str

    def load(self):
        """The command's CommandSpec (dr.cli.arguments): `<NAME>` of module
        dr.cli.commands.<name>, imported now."""
        return getattr(importlib.import_module(f"dr.cli.commands.{self.name}"), self.name.upper())


# name -> the help line `dr --help` shows, in that order
_HELP = {
    "backup": "back up the plan's sources into a new snapshot",
    "snapshots": "list the snapshots in a target",
    "verify": "check snapshots and blobs (--read-data hashes every byte)",
    "restore": "restore every source of a snapshot as one ordered, journaled plan (or one source with --source)",
    "prune": "forget snapshots retention no longer keeps; reclaim unreferenced blobs",
    "plugins": "list the installed exporters",
    "plan": "validate plan files offline (no target, credential or network), or print the plan's JSON Schema",
    "version": "dr's version, the repository format, the exporter contract, Python and the installed exporters",
    "unlock": "remove stale locks left by dead dr processes",
    "demo": "back up, list, verify and restore local stand-ins: no cluster needed",
    "audit": "judge whether a restore needs anything from a failed domain (exit 4 on blockers)",
    "drill": "audit, restore into a scratch target, verify, and record measured RPO/RTO (--history: the trend)",
    "status": "RPO now: newest backup per source and per training run, against objectives (exit 7 on a breach)",
    "deploy": "render the Kubernetes objects (or a Helm chart) that run the plan's backups",
    "advise": "advice from what backups measured: checkpoint intervals (Young/Daly), GPU-hours lost, DR tiers",
    "completion": "print a shell completion script (bash, zsh or fish) generated from dr's parser",
}
COMMANDS: list[Command] = [Command(name, text) for name, text in _HELP.items()]


def help_of(name: str) -> str:
    return _HELP[name]
