"""`dr status`: how much would be lost now (RPO), per source and per training run
(dr.audit.rpo_status), with what each source's newest backup noticed (its findings: code,
severity, object). Exit 7 when any objective is breached, so a cron job or an alert can
gate on it.
"""

from __future__ import annotations

import argparse
from datetime import timedelta

from dr.audit.rpo_status import rpo_status
from dr.cli.arguments import CommandSpec, identities, lock_wait_arg, open_plan, plan_and_target_args
from dr.cli.commands import help_of
from dr.cli.exitcodes import Exit
from dr.cli.metrics import metrics_args, publish
from dr.cli.output import Output
from dr.exporters.contract import Exporter
from dr.exporters.registry import PluginError, Registry
from dr.metrics.samples import status_run_samples, status_samples
from dr.model.durations import format_duration
from dr.model.plans import Plan
from dr.model.snapshots import failed_runs
from dr.repository.locks import Lock
from dr.repository.repositories import NotARepository
from dr.repository.targets import choose_target, open_target
from dr.restore.copies import check_outside_copies


def run(args: argparse.Namespace, out: Output) -> int:
    plan, registry = open_plan(args)
    target = choose_target(plan, args.target)
    status = rpo_status(plan, registry, target, read_data=args.read_data)
    status.runs.extend(_copy_rows(plan, registry, target, args))
    for row in status.sources:
        out.say(_source_line(row))
        for finding in row["findings"]:
            out.say(f"  {finding['severity']:<7} {finding['code']}"
                    + (f" {finding['object']}" if finding["object"] else "") + f": {finding['message']}")
    for row in status.runs:
        out.say(f"  {row['subject']}: {row['detail']}" + ("  BREACH" if row["breach"] else ""))
    out.document(status.to_json())
    objectives = {s.name: {"rpo": _seconds(s.rpo_delta), "rto": _seconds(s.rto_delta)} for s in plan.spec.sources}
    publish(args, out, lambda now: status_samples(plan.name, target.name, status.to_json(), objectives)
            + status_run_samples(plan.name, target.name, now))
    return Exit.RPO_BREACH if status.breached else Exit.OK


def _source_line(row: dict) -> str:
    """"config  newest good backup 5h ago; the 4 runs since failed: <why>; rpo 1h  BREACH"."""
    seconds = row["age_seconds"]
    age = "no good backup" if seconds is None else \
        f"newest good backup {format_duration(timedelta(seconds=int(seconds)))} ago"
    failed = failed_runs(row["failed_runs"], row["failure"] or "", seconds is not None)
    return f"{row['source']:<24} {age}{failed}; rpo {row['rpo'] or '-'}" + ("  BREACH" if row["breach"] else "")


def _copy_rows(plan: Plan, registry: Registry, target, args: argparse.Namespace) -> list[dict]:
    """The newest copies outside the repository that no exporter's own rpo_report checks (images
    in DR registries, model weights): checked exactly as `dr verify` checks them, because a copy
    a restore would refuse is a recovery point already lost (a breach)."""
    repo = open_target(plan, target)
    try:
        repo.open()
    except NotARepository:
        return []  # nothing backed up yet: the per-source rows already say so
    sources = {s.name for s in plan.spec.sources if not _reports_own_copies(registry, s.type)}
    with Lock(repo, exclusive=False, command="dr status").acquire(args.lock_wait):
        found = check_outside_copies(plan, registry, repo, read_data=args.read_data,
                                     identities=identities(args, plan), sources=sources)
    return [{"source": copies.source, "subject": f"{copies.source} copy {report.what}",
             "detail": (f"at {report.where} (snapshot {copies.snapshot}): " + "; ".join(report.problems))
             if report.problems else f"at {report.where} (snapshot {copies.snapshot}) checks out",
             "breach": not report.ok, **report.data}
            for copies in found for report in copies.reports]


def _reports_own_copies(registry: Registry, kind: str) -> bool:
    """An exporter with its own rpo_report checks its copies there (checkpoints: per run and tier)."""
    try:
        return registry.get(kind).rpo_report is not Exporter.rpo_report
    except PluginError:
        return True  # the plan's plugin problems are reported when it loads
def _seconds(objective: timedelta | None) -> float | None:
    return None if objective is None else objective.total_seconds()


def arguments(p: argparse.ArgumentParser) -> None:
    plan_and_target_args(p)
    p.add_argument("--read-data", action="store_true", help="hash every file of each newest DR copy outside "
                   "the repository (without it: marker, manifest and sizes are checked)")
    p.add_argument("--identity", metavar="FILE", help="age identity file, to read secret artifacts that record "
                   "copies (default: the file named by the plan's identity_env)")
    lock_wait_arg(p)
    metrics_args(p)


STATUS = CommandSpec("status", help_of("status"), arguments, run)
