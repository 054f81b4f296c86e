"""`dr backup`: run the plan's sources into a new snapshot on each target (dr.backup)."""

from __future__ import annotations

import argparse

from dr.backup import run_backup
from dr.cli.arguments import CommandSpec, open_plan, plan_arg
from dr.cli.commands import help_of
from dr.cli.exitcodes import Exit
from dr.cli.metrics import metrics_args, publish
from dr.cli.output import Output, human_size


def arguments(p: argparse.ArgumentParser) -> None:
    plan_arg(p)
    p.add_argument("--source", action="append", metavar="NAME", help="only this source (repeatable)")
    p.add_argument("--lock-wait", type=float, default=0.0, metavar="SECONDS",
                   help="wait this long for another dr process to release the repository")
    metrics_args(p)


def run(args: argparse.Namespace, out: Output) -> int:
    plan, registry = open_plan(args)
    with out.progress("backup") as advance:
        results = run_backup(plan, registry, args.source, lock_wait=args.lock_wait,
                             on_progress=advance, log=out.note)
    failed = False
    for result in results:
        for warning in result.warnings:  # shown under --quiet too: cron runs quiet
            out.warn(warning)
        _print_result(out, result)
        failed |= bool(result.failed_sources) or result.snapshot is None
    documents = [r.to_json() for r in results]
    out.document({"results": documents})
    publish(args, out, lambda now: _samples(plan, documents, out, now))
    if all(r.snapshot is None for r in results):
        return Exit.FAILURE
    return Exit.PARTIAL if failed else Exit.OK


def _samples(plan, documents: list[dict], out: Output, now: float) -> list:
    from dr.metrics.samples import backup_samples  # only a run that publishes metrics needs them
    from dr.metrics.schedules import longest_gap_seconds

    ran = {s["name"] for d in documents for s in d["sources"]}
    chosen = [s for s in plan.spec.sources if s.name in ran]
    unscheduled = [s.name for s in chosen if not s.schedule]
    if unscheduled:  # said, not skipped silently: the alert cannot watch them
        out.warn(f"metrics: no schedule in the plan for {', '.join(unscheduled)}: no "
                 "dr_backup_schedule_interval_seconds, so the DrBackupMissing alert cannot fire for them")
    gaps = {s.name: longest_gap_seconds(s.schedule) for s in chosen if s.schedule}
    return backup_samples(plan.name, documents, gaps, now)


def _transferred(stats: dict) -> str:
    """Checkpoint DR copies are written by the exporter, not through the repository."""
    copied = stats.get("bytes_transferred", 0)
    return f", {human_size(copied)} written to DR copies outside the repository" if copied else ""


def _print_result(out: Output, result) -> None:
    snap = result.snapshot
    if snap is None:
        out.say(f"{result.target}: no snapshot written: every source failed")
    else:
        stats = snap.stats
        out.say(f"{result.target}: snapshot {snap.short_id} written to {result.repository}: "
                f"{stats['artifacts']} artifacts, {human_size(stats['bytes_read'])} read, "
                f"{human_size(stats['bytes_uploaded'])} uploaded in {stats['blobs_uploaded']} new blobs, "
                f"{stats['artifacts_reused']} unchanged artifacts reused{_transferred(stats)}")
    for source in result.sources:
        state = "ok" if source.good else f"FAILED: {source.error}" if source.error else \
            "FAILED (the error below): not a good backup"
        out.say(f"  {source.name} ({source.exporter}): {source.artifacts} artifacts, "
                f"{human_size(source.bytes)} - {state}")
        for finding in source.findings:
            out.say(f"    {finding['severity']}: {finding['message']}")


BACKUP = CommandSpec("backup", help_of("backup"), arguments, run)
