"""`dr demo`: back up, list, verify and restore local stand-ins (the script is dr.cli.demo)."""

from __future__ import annotations

import argparse

from dr.cli.arguments import CommandSpec
from dr.cli.commands import help_of
from dr.cli.demo import run_demo
from dr.cli.output import Output


def arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--dir", default="demo-output", help="where the demo builds its stand-ins (default ./demo-output)")
    p.add_argument("--kubeconfig", metavar="FILE", help="a kubeconfig with contexts 'cluster-a' (a stand-in "
                   "cluster to back up) and 'recovery' (an empty one to restore into); scripts/demo starts "
                   "emulated ones")


def run(args: argparse.Namespace, out: Output) -> int:
    return run_demo(args.dir, out, args.kubeconfig, args.main)


DEMO = CommandSpec("demo", help_of("demo"), arguments, run)
