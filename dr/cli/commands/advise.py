"""`dr advise checkpoints`: how often each training run should checkpoint, and what its DR
tiers should keep (dr.audit.checkpoint_advice; docs/readiness.md, check 2).

Read-only: it reads the newest snapshot holding each source, under a shared lock. Exit 2 when
the plan gives no MTBF for a run (the advice has nothing to weigh saves against), 3 when some
run could not be advised (each is named with why), 1 when no snapshot records any save.
"""

from __future__ import annotations

import argparse
from datetime import timedelta

from dr.audit.checkpoint_advice import RunAdvice, advise
from dr.cli.arguments import CommandSpec, UsageError, open_plan, plan_and_target_args
from dr.cli.commands import help_of
from dr.cli.exitcodes import Exit
from dr.cli.output import Output
from dr.model.durations import format_duration
from dr.repository.locks import Lock
from dr.repository.repositories import NotARepository
from dr.repository.targets import choose_target, open_target


def run(args: argparse.Namespace, out: Output) -> int:
    plan, registry = open_plan(args)
    repo = open_target(plan, choose_target(plan, args.target))
    try:
        repo.open()
    except NotARepository:
        raise UsageError(f"{repo.description} holds no repository yet: run dr backup --plan {args.plan} "
                         "first (the advice is computed from the saves backups measured)") from None
    with Lock(repo, exclusive=False, command="dr advise").acquire():
        found = advise(plan, registry, repo, args.run or None)
    out.document({"runs": [a.to_json() for a in found]})
    if not found:
        which = f" matching {', '.join(args.run)}" if args.run else ""
        out.error(f"no training run{which} has checkpoint saves recorded in {repo.description}: "
                  "back up a checkpoints source first")
        return Exit.FAILURE
    for advice in found:
        _say(out, advice)
    no_mtbf = [a.run for a in found if not a.costs.mtbf_hours]
    if no_mtbf:
        raise UsageError(f"{plan.path}: readiness.mtbf_hours is not set for run(s) {', '.join(no_mtbf)}: add "
                         "`readiness: {mtbf_hours: N}` (the training job's mean time between failures, "
                         "in hours), or a readiness.runs entry for the run")
    return Exit.OK if all(a.advised for a in found) else Exit.PARTIAL


def _say(out: Output, a: RunAdvice) -> None:
    f, c = a.figures, a.costs
    cost = f"{_dur(f.save_cost)} save cost" if f.save_cost is not None else "save cost unknown"
    price = f" at {c.gpu_cost_per_hour:g}/GPU-hour" if c.gpu_cost_per_hour is not None else ""
    mtbf = f"MTBF {c.mtbf_hours:g}h" if c.mtbf_hours else "MTBF not set"
    out.say(f"run {a.run} (source {a.source}, snapshot {a.snapshot}): {f.saves} saves, {cost}, {mtbf}, "
            f"{c.gpus} GPU(s){price}")
    if a.newest is not None and a.newest.resume:
        out.say(f"  newest   step {a.newest.step}: {a.newest.resume}")
    for label, interval in (("now", f.interval), ("advised", f.advised)):
        figures = a.at(interval)
        if interval is None:
            out.say(f"  {label:<8} unknown")
        elif figures is None:
            out.say(f"  {label:<8} every {_dur(interval)}")
        else:
            out.say(f"  {label:<8} every {_dur(interval)}: {figures['lost_gpu_hours_per_failure']:g} GPU-hours "
                    f"lost per failure{_money(figures, 'cost_per_failure')}, "
                    f"{figures['wasted_gpu_hours_per_day']:g} GPU-hours a day lost to saves and failures"
                    f"{_money(figures, 'cost_per_day')}")
    tiers = a.tiers()
    if tiers:
        m = tiers["milestone"]
        milestone = f"step_multiple {m['step_multiple']}" if "step_multiple" in m else f"one every {m['every']}"
        out.say(f"  tiers    near: min_interval {tiers['near']['min_interval']}, keep_last 2; far: min_interval "
                f"{tiers['far']['min_interval']} ({tiers['far']['why']}); milestone: {milestone}, milestones_only")
    for note in f.notes + a.notes:
        out.say(f"  note: {note}")
    out.say("  (advised = sqrt(2 x MTBF x save cost), Young/Daly; lost per failure = interval/2 + save cost)")


def _money(figures: dict, key: str) -> str:
    return f" ({figures[key]:g})" if key in figures else ""


def _dur(seconds: float) -> str:
    return format_duration(timedelta(seconds=max(1, int(round(seconds)))))


def arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("what", choices=["checkpoints"], help="what to advise on: checkpoints (the interval and "
                   "the DR tiers of each training run)")
    plan_and_target_args(p)
    p.add_argument("--run", action="append", metavar="RUN", help="only this training run (a name or glob; "
                   "repeat for several)")


ADVISE = CommandSpec("advise", help_of("advise"), arguments, run)
