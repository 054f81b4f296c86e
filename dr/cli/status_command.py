"""`dr status`: how much would be lost now (RPO), per source and per training run.

Per source: the age of the newest snapshot holding it, against the source's `rpo` objective.
Then whatever each source's exporter keeps outside the repository and reports itself
(contract v2 rpo_report): for checkpoints, per training run and tier, the newest complete
checkpoint at the source against the newest complete, verified DR copy. Exit 7 when any
objective is breached, so a cron job or an alert can gate on it.
"""

from __future__ import annotations

import argparse
from datetime import datetime, timezone

from dr.cli.commands import CommandSpec, _plan, _plan_arg, _target_arg
from dr.cli.exitcodes import Exit
from dr.cli.output import Output
from dr.exporters.contract import ExportContext
from dr.model.durations import format_duration
from dr.repository.repositories import NotARepository
from dr.repository.targets import choose_target, open_target


def arguments(p: argparse.ArgumentParser) -> None:
    _plan_arg(p)
    _target_arg(p)


def run(args: argparse.Namespace, out: Output) -> int:
    plan, registry = _plan(args)
    repo = open_target(plan, choose_target(plan, args.target))
    try:
        repo.open()
        snapshots = repo.snapshots()
    except NotARepository:
        snapshots = []  # nothing backed up yet: every source with an objective is in breach
    now = datetime.now(timezone.utc)
    rows = [_source_row(source, snapshots, now) for source in plan.spec.sources]
    runs = [row for source in plan.spec.sources for row in _exporter_rows(plan, registry, source)]
    for row in rows:
        age = "never backed up" if row["age_seconds"] is None else f"{_ago(row['age_seconds'])} ago"
        out.say(f"{row['source']:<24} newest snapshot {age}; rpo {row['rpo'] or '-'}"
                + ("  BREACH" if row["breach"] else ""))
    for row in runs:
        out.say(f"  {row['subject']}: {row['detail']}" + ("  BREACH" if row["breach"] else ""))
    out.document({"sources": rows, "runs": runs})
    return Exit.RPO_BREACH if any(r["breach"] for r in rows + runs) else Exit.OK


def _source_row(source, snapshots, now) -> dict:
    holding = [s for s in snapshots if source.name in s.source_names()]
    age = (now - holding[-1].time).total_seconds() if holding else None
    objective = source.rpo_delta
    breach = objective is not None and (age is None or age > objective.total_seconds())
    return {"source": source.name, "snapshot": holding[-1].id if holding else None,
            "age_seconds": age, "rpo": source.rpo, "breach": breach}


def _exporter_rows(plan, registry, source) -> list[dict]:
    context = ExportContext(source.name, plan.options[source.name], plan.base_dir, source.sensitivity)
    exporter = registry.get(source.type)(context)
    return [{"source": source.name, **row.to_json()} for row in exporter.rpo_report(source.rpo_delta)]


def _ago(seconds: float | None) -> str:
    if seconds is None:
        return "unknown"
    from datetime import timedelta

    return format_duration(timedelta(seconds=int(seconds)))


STATUS = CommandSpec("status", "RPO now: newest backup per source and per training run, against objectives "
                     "(exit 7 on a breach)", arguments, run)
