"""`dr unlock`: remove locks left by dead dr processes (dr.repository.locks)."""

from __future__ import annotations

import argparse

from dr.cli.arguments import CommandSpec, open_repository, plan_and_target_args
from dr.cli.commands import help_of
from dr.cli.exitcodes import Exit
from dr.cli.output import Output
from dr.repository.locks import remove_locks


def arguments(p: argparse.ArgumentParser) -> None:
    plan_and_target_args(p)
    p.add_argument("--remove-all", action="store_true", help="remove every lock, not only stale ones")


def run(args: argparse.Namespace, out: Output) -> int:
    _, _, repo = open_repository(args)
    removed = remove_locks(repo, all_locks=args.remove_all)
    out.say(f"removed {len(removed)} lock(s)" + "".join(f"\n  {r}" for r in removed))
    out.document({"removed": removed})
    return Exit.OK


UNLOCK = CommandSpec("unlock", help_of("unlock"), arguments, run)
