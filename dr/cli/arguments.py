"""What every command is built from: its spec, the arguments the commands share, and opening
the plan and the repository those arguments name.

Command modules (dr.cli.commands.*) import this module and the library, never one another.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Callable

from dr.cli.output import Output
from dr.exporters.registry import Registry
from dr.model.plan_loading import load_plan
from dr.model.plans import Plan, TargetSpec
from dr.repository import encryption
from dr.repository.repositories import Repository
from dr.repository.targets import choose_target, open_target


class UsageError(Exception):
    """The command line asks for something that cannot be done as asked (exit 2)."""


@dataclass
class CommandSpec:
    name: str
    help: str
    arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace, Output], int]


def plan_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--plan", required=True, metavar="FILE", help="the DR plan (YAML)")


def target_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--target", metavar="NAME", help="which target (default: the first that survives "
                   "every protected domain)")


def plan_and_target_args(p: argparse.ArgumentParser) -> None:
    plan_arg(p)
    target_arg(p)


def output_args(p: argparse.ArgumentParser) -> None:
    """Every command's: how it prints, and whether an expected error shows its traceback."""
    p.add_argument("--json", action="store_true", help="machine-readable output on stdout")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress or notes on stderr")
    p.add_argument("--debug", action="store_true",
                   help="print the traceback of an expected error too (one that is not a bug)")


def open_plan(args: argparse.Namespace) -> tuple[Plan, Registry]:
    """The plan --plan names, validated with the installed exporters' option schemas."""
    registry = Registry()
    return load_plan(args.plan, registry), registry


def open_repository(args: argparse.Namespace) -> tuple[Plan, TargetSpec, Repository]:
    """(plan, the target --target names or the default one, that target's opened repository)."""
    plan, _ = open_plan(args)
    target = choose_target(plan, args.target)
    repo = open_target(plan, target)
    repo.open()
    return plan, target, repo


def identities(args: argparse.Namespace, plan: Plan):
    """Age identities for secret content: --identity FILE, else the plan's identity_env variable."""
    return encryption.load_identities(args.identity) if args.identity else \
        encryption.identities_from_env(plan.spec.encryption.identity_env)
