"""`dr status`: how much would be lost now (RPO), per source and per training run (dr.status,
which owns the lock: this module parses and prints), with what each source's newest backup
noticed (its findings: code, severity, object). Exit 7 when any objective is breached, so a
cron job or an alert can gate on it; exit 6 when the repository data status reads is damaged (the
config, the catalog of a source's newest good backup: a restore would refuse it, so the source is
measured from its newest backup a restore can read), each damaged object listed as a PROBLEM.
"""

from __future__ import annotations

import argparse
from datetime import timedelta

from dr.cli.arguments import (
    CommandSpec,
    identities,
    lock_wait_arg,
    open_plan,
    plan_and_target_args,
)
from dr.cli.commands import help_of
from dr.cli.exitcodes import Exit
from dr.cli.metrics import metrics_args, publish
from dr.cli.output import Output
from dr.metrics.samples import status_run_samples, status_samples
from dr.model.durations import format_duration
from dr.model.snapshots import failed_runs
from dr.repository.targets import choose_target
from dr.status import current_status


def run(args: argparse.Namespace, out: Output) -> int:
    plan, registry = open_plan(args)
    target = choose_target(plan, args.target)
    status = current_status(plan, registry, target, read_data=args.read_data, identities=identities(args, plan),
                            lock_wait=args.lock_wait)
    for row in status.sources:
        out.say(_source_line(row))
        for finding in row["findings"]:
            out.say(f"  {finding['severity']:<7} {finding['code']}"
                    + (f" {finding['object']}" if finding["object"] else "") + f": {finding['message']}")
    for row in status.runs:
        out.say(f"  {row['subject']}: {row['detail']}" + ("  BREACH" if row["breach"] else ""))
    for problem in status.problems:  # damage a restore would refuse: no recovery point stands on it
        out.say(f"  PROBLEM: {problem}")
    out.document(status.to_json())
    objectives = {s.name: {"rpo": _seconds(s.rpo_delta), "rto": _seconds(s.rto_delta)} for s in plan.spec.sources}
    publish(args, out, lambda now: status_samples(plan.name, target.name, status.to_json(), objectives)
            + status_run_samples(plan.name, target.name, now))
    if status.problems:  # damaged data is 6 whatever else holds (README, exit codes)
        return Exit.INTEGRITY
    return Exit.RPO_BREACH if status.breached else Exit.OK


def _source_line(row: dict) -> str:
    """"config  newest good backup 5h ago; the 4 runs since failed: <why>; rpo 1h  BREACH"."""
    seconds = row["age_seconds"]
    age = "no good backup" if seconds is None else \
        f"newest good backup {format_duration(timedelta(seconds=int(seconds)))} ago"
    failed = failed_runs(row["failed_runs"], row["failure"] or "", seconds is not None)
    return f"{row['source']:<24} {age}{failed}; rpo {row['rpo'] or '-'}" + ("  BREACH" if row["breach"] else "")


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
