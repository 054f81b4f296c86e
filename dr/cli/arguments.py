"""What every command is built from: its spec, the arguments the commands share, and opening
the plan and the repository those arguments name.

Command modules (dr.cli.commands.*) import this module and the library, never one another.
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass
from typing import Callable

from dr.cli.output import Output, emit
from dr.contract.registry import Registry
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
    p.add_argument("--plan", metavar="FILE", help="the DR plan (YAML); default: the file DR_PLAN names")


def target_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--target", metavar="NAME", help="which target (default: the first that survives "
                   "every protected domain)")


def plan_and_target_args(p: argparse.ArgumentParser) -> None:
    plan_arg(p)
    target_arg(p)


def lock_wait_arg(p: argparse.ArgumentParser) -> None:
    """For the commands that take the shared lock: only a prune's exclusive one keeps them waiting."""
    p.add_argument("--lock-wait", type=float, default=0.0, metavar="SECONDS",
                   help="wait this long for an exclusive lock (a prune's) to go (default: fail at once)")


class Renamed(argparse._StoreAction):
    """An option renamed so that one concept has one spelling across commands (issue 31): the
    first option string is its name, the others are old spellings kept for one release. Using
    one prints a one-line warning on stderr (never on --json's stdout) and works as the name."""

    def __call__(self, parser, namespace, values, option_string=None):
        if option_string != self.option_strings[0]:
            deprecated(f"{parser.prog} {option_string}", self.option_strings[0])
        super().__call__(parser, namespace, values, option_string)


class DeprecatedSwitch(argparse._StoreConstAction):
    """A flag kept for one release as the shorthand of a valued option's value (`dr verify
    --images` for `--type images`): it sets that option and warns, like a Renamed spelling.
    Completion does not offer it (deprecated)."""

    deprecated = True

    def __init__(self, option_strings, dest, replacement: str, **kwargs):
        self.replacement = replacement
        super().__init__(option_strings, dest, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        deprecated(f"{parser.prog} {option_string}", self.replacement)
        super().__call__(parser, namespace, values, option_string)


def deprecated(old: str, new: str) -> None:
    """The warning for an old spelling, shown under --quiet too: a cron job must learn of it."""
    emit(sys.stderr, f"warning: {old} is deprecated and will be removed in the next release: use {new}\n")


def open_plan(args: argparse.Namespace) -> tuple[Plan, Registry]:
    """The plan --plan names, validated with the installed exporters' option schemas."""
    registry = Registry()
    return with_cluster_flags(load_plan(args.plan, registry), args), registry


# The options by which a source names the cluster it reads (kubernetes, images' pull secrets).
CLUSTER_OPTIONS = ("kubeconfig", "context")


def with_cluster_flags(plan: Plan, args: argparse.Namespace) -> Plan:
    """`plan` with --kubeconfig and --context over each source's kubeconfig and context options:
    the command line wins over the plan, as it does over the environment. Each flag replaces its
    own option only; a relative --kubeconfig is the working directory's, not the plan folder's."""
    given = {"kubeconfig": os.path.abspath(args.kubeconfig) if getattr(args, "kubeconfig", None) else None,
             "context": getattr(args, "context", None)}
    given = {key: value for key, value in given.items() if value}
    if not given:
        return plan
    for name, options in plan.options.items():
        if set(CLUSTER_OPTIONS) <= set(getattr(type(options), "model_fields", ())):
            plan.options[name] = options.model_copy(update=given)
    return plan


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
