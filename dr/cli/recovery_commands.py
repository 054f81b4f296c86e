"""`dr restore` of a whole plan (no --source), and `dr drill`: the commands of a recovery.

Where it sits: dr.cli.commands' restore delegates here when no --source is given; DRILL is
registered in dr.cli.main. The work is in dr.restore (plan, journal, execution) and dr.drills
(audit + restore + verify + history); this module parses, prints and picks exit codes:

  dr restore --dry-run   0 when every step may run, 4 when a step is refused for blockers
  dr restore             0 when every step succeeded (now or in an earlier run of the same
                         restore), 4 when nothing failed but blocked steps were refused,
                         3 when some steps succeeded and others did not, 1 when none did
  dr drill               0 recovered, 3 partial, 1 failed (the record is written in every case)
"""

from __future__ import annotations

import argparse
import os

from dr.cli.commands import CommandSpec, UsageError
from dr.cli.exitcodes import Exit
from dr.cli.output import Output
from dr.exporters.registry import Registry
from dr.model.plan_loading import load_plan
from dr.model.recovery import UnknownDomain
from dr.repository import encryption
from dr.repository.locks import Lock
from dr.repository.targets import choose_target, open_target
from dr.restore import RestoreUsageError, choose_restore_target, prepare, run_plan_restore
from dr.restore.describing import estimate_lines, plan_lines, progress_line, result_lines
from dr.restore.destinations import parse_destinations
from dr.restore.journals import JournalError


def _identities(args: argparse.Namespace, plan):
    return encryption.load_identities(args.identity) if args.identity else \
        encryption.identities_from_env(plan.spec.encryption.identity_env)


def _sources(plan) -> list[str]:
    return [s.name for s in plan.spec.sources]


# -- dr restore (whole plan) -------------------------------------------------------------------
def restore_plan(args: argparse.Namespace, out: Output) -> int:
    registry = Registry()
    plan = load_plan(args.plan, registry)
    failed = args.failed or []
    destinations, problems = parse_destinations(args.to or [], _sources(plan))
    if problems:
        raise UsageError("; ".join(problems))
    try:
        target = choose_restore_target(plan, failed, args.target)
    except UnknownDomain as exc:
        raise UsageError(f"--failed: {exc}") from None
    except KeyError:
        raise UsageError(f"--target: no target '{args.target}' in {args.plan}") from None
    repo = open_target(plan, target)
    repo.open()
    with Lock(repo, exclusive=False, command=f"dr restore --plan {plan.name}").acquire(args.lock_wait):
        try:
            prepared = prepare(plan, repo, target, registry, snapshot_ref=args.snapshot, failed=failed,
                               destinations=destinations, force=args.force)
        except (UnknownDomain, RestoreUsageError) as exc:
            raise UsageError(str(exc)) from None
        for line in plan_lines(prepared.restore_plan) + estimate_lines(prepared.estimate):
            out.say(line)
        if args.dry_run:
            out.document(prepared.to_json())
            return Exit.BLOCKERS if prepared.restore_plan.blocked else Exit.OK
        return _execute(args, out, plan, registry, prepared)


def _execute(args, out: Output, plan, registry, prepared) -> int:
    total = len(prepared.restore_plan.steps)
    try:
        run = run_plan_restore(prepared, registry, identities=_identities(args, plan), overwrite=args.overwrite,
                               parallel=args.parallel, resume=args.resume, new=args.new,
                               on_event=lambda kind, step, result: out.note(progress_line(kind, step, result, total)),
                               log=out.note)
    except (JournalError, RestoreUsageError) as exc:
        out.error(str(exc))
        return Exit.FAILURE
    for line in result_lines(run.restore_id, run.resumed, run.results):
        out.say(line)
    out.document({**prepared.to_json(), "run": run.to_json()})
    if run.finished:
        return Exit.OK
    succeeded = run.count("succeeded")
    if not succeeded and run.count("failed") == 0 and run.count("refused"):
        return Exit.BLOCKERS
    return Exit.PARTIAL if succeeded else Exit.FAILURE


# -- dr drill ------------------------------------------------------------------------------------
def drill_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--plan", required=True, metavar="FILE", help="the DR plan (YAML)")
    p.add_argument("--failed", action="append", metavar="DOMAIN",
                   help="a failure domain the drill pretends is gone (repeatable: all fail at once)")
    p.add_argument("--to", action="append", metavar="SCRATCH|SOURCE=DEST",
                   help="a scratch folder (each source restores into its own subfolder), and/or "
                        "SOURCE=DEST for a source (a kubernetes source needs a scratch cluster context)")
    p.add_argument("--history", action="store_true", help="show the drill history and its trend instead")
    p.add_argument("--snapshot", default="latest", metavar="ID", help="id prefix or 'latest' (default)")
    p.add_argument("--target", metavar="NAME", help="read the snapshot from this target")
    p.add_argument("--force", action="store_true", help="restore blocked steps anyway (recorded)")
    p.add_argument("--identity", metavar="FILE", help="age identity file for secret content")
    p.add_argument("--parallel", type=int, default=4, metavar="N", help="steps restored at once (default 4)")
    p.add_argument("--lock-wait", type=float, default=0.0, metavar="SECONDS")


def drill(args: argparse.Namespace, out: Output) -> int:
    if args.history:
        return _history(args, out)
    from dr.drills import run_drill
    from dr.audit import UnknownDomain as AuditUnknownDomain

    registry = Registry()
    plan = load_plan(args.plan, registry)
    if not args.failed or not args.to:
        raise UsageError("a drill needs --failed DOMAIN and --to SCRATCH (or SOURCE=DEST); "
                         "--history shows past drills")
    scratch, destinations = _drill_destinations(args.to, _sources(plan))
    steps = {"total": 0}

    def on_plan(prepared) -> None:
        steps["total"] = len(prepared.restore_plan.steps)
        for line in plan_lines(prepared.restore_plan):
            out.note(line)

    try:
        record = run_drill(plan, registry, failed=args.failed, scratch=scratch, destinations=destinations,
                           snapshot_ref=args.snapshot, target_name=args.target, identities=_identities(args, plan),
                           force=args.force, parallel=args.parallel, lock_wait=args.lock_wait,
                           on_plan=on_plan,
                           on_event=lambda kind, step, result: out.note(
                               progress_line(kind, step, result, steps["total"])))
    except (AuditUnknownDomain, UnknownDomain, RestoreUsageError) as exc:
        raise UsageError(str(exc)) from None
    from dr.drills.describing import drill_lines

    for line in drill_lines(record):
        out.say(line)
    out.document(record)
    return {"recovered": Exit.OK, "partial": Exit.PARTIAL}.get(record["result"], Exit.FAILURE)


def _drill_destinations(values: list[str], sources: list[str]) -> tuple[str | None, dict[str, str]]:
    pairs = [v for v in values if v.partition("=")[0] in sources and "=" in v]
    folders = [v for v in values if v not in pairs]
    if len(folders) > 1:
        raise UsageError(f"--to: one scratch folder, or SOURCE=DEST pairs; got folders {folders}")
    destinations, problems = parse_destinations(pairs, sources)
    if problems:
        raise UsageError("; ".join(problems))
    return (os.path.abspath(folders[0]) if folders else None), destinations


def _history(args: argparse.Namespace, out: Output) -> int:
    from dr.drills import read_history, trend
    from dr.drills.describing import history_lines

    plan = load_plan(args.plan)
    target = choose_target(plan, args.target)
    repo = open_target(plan, target)
    repo.open()
    records = read_history(repo)
    summary = trend(records)
    for line in history_lines(records, summary, target.name):
        out.say(line)
    out.document({"target": target.name, "drills": records, "trend": summary})
    return Exit.OK


DRILL = CommandSpec("drill", "audit, restore into a scratch target, verify, and record measured RPO/RTO "
                    "(--history: the trend)", drill_arguments, drill)
