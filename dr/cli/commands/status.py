"""`dr status`: how much would be lost now (RPO), per source and per training run
(dr.audit.rpo_status), with what each source's newest backup noticed (its findings: code,
severity, object). Exit 7 when any objective is breached, so a cron job or an alert can
gate on it.
"""

from __future__ import annotations

import argparse
from datetime import timedelta

from dr.audit.rpo_status import rpo_status
from dr.cli.arguments import CommandSpec, open_plan, plan_and_target_args
from dr.cli.exitcodes import Exit
from dr.cli.output import Output
from dr.model.durations import format_duration
from dr.repository.targets import choose_target


def run(args: argparse.Namespace, out: Output) -> int:
    plan, registry = open_plan(args)
    status = rpo_status(plan, registry, choose_target(plan, args.target), read_data=args.read_data)
    for row in status.sources:
        age = "never backed up" if row["age_seconds"] is None else \
            f"{format_duration(timedelta(seconds=int(row['age_seconds'])))} ago"
        out.say(f"{row['source']:<24} newest snapshot {age}; rpo {row['rpo'] or '-'}"
                + ("  BREACH" if row["breach"] else ""))
        for finding in row["findings"]:
            out.say(f"  {finding['severity']:<7} {finding['code']}"
                    + (f" {finding['object']}" if finding["object"] else "") + f": {finding['message']}")
    for row in status.runs:
        out.say(f"  {row['subject']}: {row['detail']}" + ("  BREACH" if row["breach"] else ""))
    out.document(status.to_json())
    return Exit.RPO_BREACH if status.breached else Exit.OK


def arguments(p: argparse.ArgumentParser) -> None:
    plan_and_target_args(p)
    p.add_argument("--read-data", action="store_true", help="hash every file of each newest DR copy outside "
                   "the repository (without it: marker, manifest and sizes are checked)")


STATUS = CommandSpec("status", "RPO now: newest backup per source and per training run, against objectives "
                     "(exit 7 on a breach)", arguments, run)
