"""`dr prune`: forget what retention no longer keeps, reclaim unreferenced blobs
(dr.repository.pruning.prune_by_retention)."""

from __future__ import annotations

import argparse

from dr.cli.arguments import CommandSpec, open_repository, plan_and_target_args
from dr.cli.exitcodes import Exit
from dr.cli.output import Output, human_size
from dr.repository.pruning import prune_by_retention


def arguments(p: argparse.ArgumentParser) -> None:
    plan_and_target_args(p)
    p.add_argument("--dry-run", action="store_true", help="say what would be removed; remove nothing")


def run(args: argparse.Namespace, out: Output) -> int:
    plan, _, repo = open_repository(args)
    report = prune_by_retention(plan, repo, dry_run=args.dry_run)
    verb = "would forget" if args.dry_run else "forgot"
    out.say(f"{repo.description}: {verb} {len(report.forgotten)} of {report.snapshots_examined} snapshots; "
            f"{report.blobs_deleted} unreferenced blobs ({human_size(report.bytes_freed)}) "
            f"{'would be ' if args.dry_run else ''}removed, {report.blobs_kept} kept")
    out.document(report.to_json())
    return Exit.OK


PRUNE = CommandSpec("prune", "forget snapshots retention no longer keeps; reclaim unreferenced blobs",
                    arguments, run)
