"""`dr prune`: forget what retention no longer keeps, reclaim unreferenced blobs
(dr.repository.pruning.prune_by_retention)."""

from __future__ import annotations

import argparse

from dr.cli.arguments import CommandSpec, UsageError, open_repository, plan_and_target_args
from dr.cli.commands import help_of
from dr.cli.exitcodes import Exit
from dr.cli.metrics import metrics_args, publish
from dr.cli.output import Output, human_size
from dr.metrics.samples import prune_samples
from dr.repository.pruning import prune_by_retention


def arguments(p: argparse.ArgumentParser) -> None:
    plan_and_target_args(p)
    p.add_argument("--dry-run", action="store_true", help="say what would be removed; remove nothing")
    p.add_argument("--lock-wait", type=float, default=0.0, metavar="SECONDS",
                   help="wait this long for running backups, verifies and restores to release the repository "
                        "(prune takes the exclusive lock; default: fail at once)")
    metrics_args(p)


def run(args: argparse.Namespace, out: Output) -> int:
    if args.dry_run and (args.metrics_file or args.pushgateway):  # a dry run pruned nothing
        raise UsageError("--dry-run removes nothing, so it writes no dr_prune_* metrics: drop "
                         "--metrics-file/--pushgateway, or --dry-run")
    plan, target, repo = open_repository(args)
    report = prune_by_retention(plan, repo, dry_run=args.dry_run, target=target, lock_wait=args.lock_wait)
    verb = "would forget" if args.dry_run else "forgot"
    out.say(f"{repo.description}: {verb} {len(report.forgotten)} of {report.snapshots_examined} snapshots; "
            f"{report.blobs_deleted} unreferenced blobs ({human_size(report.bytes_freed)}) "
            f"{'would be ' if args.dry_run else ''}removed, {report.blobs_kept} kept")
    _say_held(out, report)
    publish(args, out, lambda now: prune_samples(plan.name, target.name, report.to_json(), now))
    out.document(report.to_json())
    return _said_damage(out, report.damaged)


def _said_damage(out: Output, damaged: list[str]) -> int:
    """Exit 6 when a snapshot could not be read: prune did what it safely could (forgot among
    the intact snapshots) but deleted no blob, since what the damaged one references is unknown."""
    for problem in damaged:
        out.warn(f"integrity: {problem}")
    if damaged:
        out.warn(f"{len(damaged)} snapshots could not be read, so no blob was deleted (what they reference is "
                 "unknown): runbooks/damaged-snapshot.md says how to repair or forget them")
    return Exit.INTEGRITY if damaged else Exit.OK


_LISTED = 20  # held objects named one per line; --json has them all


def _say_held(out: Output, report) -> None:
    """Object Lock: what prune left because its retention has not passed (not a failure)."""
    if report.hidden_removed:
        out.say(f"  {report.hidden_removed} hidden objects removed (their retention had passed)")
    for what, held in (("unreferenced blobs", report.blobs_held),
                       ("forgotten manifests and released locks (hidden)", report.hidden_held)):
        if held:
            soonest, latest = min(h.until for h in held), max(h.until for h in held)
            out.say(f"  {len(held)} {what} still under Object Lock retention, left for a later prune "
                    f"(retention ends {soonest:%Y-%m-%d %H:%M} to {latest:%Y-%m-%d %H:%M} UTC):")
            for item in held[:_LISTED]:
                out.say(f"    {item.key} until {item.until:%Y-%m-%dT%H:%M:%SZ}")
            if len(held) > _LISTED:
                out.say(f"    ... and {len(held) - _LISTED} more (--json lists every one)")


PRUNE = CommandSpec("prune", help_of("prune"), arguments, run)
