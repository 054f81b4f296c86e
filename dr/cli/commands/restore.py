"""`dr restore`: every source of a snapshot as one ordered, judged, journaled plan (dr.restore:
prepare, run_plan_restore), or one source with --source (dr.restore.run_restore).

With --source, what the restore parser does not know is parsed by the source's exporter's
declared restore options (contract v2 restore_options, e.g. --namespace-map OLD=NEW).

  dr restore --dry-run   0 when every step may run, 4 when any step would be refused (for
                         blockers, or because it cannot run: no destination, no exporter, no data)
  dr restore             0 when every step succeeded (now or in an earlier run of the same
                         restore), 6 when a step failed on damaged data in the repository,
                         4 when nothing failed but steps were refused (whether or not others
                         succeeded), 3 when some steps succeeded and others failed, 1 when none did
  dr restore --source    0 when every item was restored, 6 when an item failed on damaged data,
                         3 when some failed, 1 when all did
"""

from __future__ import annotations

import argparse

from dr.cli.arguments import CommandSpec, UsageError, identities, lock_wait_arg, open_plan, plan_and_target_args
from dr.cli.commands import help_of
from dr.cli.exitcodes import Exit
from dr.cli.output import Output
from dr.contract import OutcomeStatus, RestoreRequest
from dr.model.plans import NotInPlan
from dr.model.recovery import UnknownDomain
from dr.planner.destinations import parse_destinations
from dr.planner.steps import REFUSED
from dr.repository.locks import Lock
from dr.repository.targets import open_target
from dr.restore import RestoreUsageError, choose_restore_target, prepare, run_plan_restore, run_restore
from dr.restore.describing import estimate_lines, plan_lines, progress_line, result_lines
from dr.restore.journals import JournalError

EPILOG = ("With --source, the source's exporter may declare restore options of its own (for "
          "example --namespace-map OLD=NEW); `dr plugins` lists every installed exporter's restore "
          "options and the remap kinds it applies.")


def arguments(p: argparse.ArgumentParser) -> None:
    p.epilog = EPILOG
    p.set_defaults(accepts_exporter_options=True)  # the source's exporter parses what is left
    plan_and_target_args(p)
    p.add_argument("--snapshot", default="latest", metavar="ID", help="id prefix or 'latest' (default)")
    p.add_argument("--source", metavar="NAME", help="restore only this source; without it every source of "
                   "the snapshot is planned together, ordered, judged and journaled (docs/restore.md)")
    p.add_argument("--to", action="append", metavar="[SOURCE=]DEST",
                   help="where to restore (exporter-specific: a directory, a remote URL, a kube context); "
                        "repeatable as SOURCE=DEST when restoring the whole plan")
    p.add_argument("--failed", action="append", metavar="DOMAIN",
                   help="whole plan: a failure domain that is gone (repeatable); steps that need it are refused"
                        "; or kind:KIND (every location of that kind in a protected domain, e.g. kind:registry) or location:NAME: locations that fail while their domains stay up")
    p.add_argument("--force", action="store_true", help="whole plan: run steps refused for blockers anyway")
    p.add_argument("--resume", metavar="RESTORE_ID", help="whole plan: continue this restore's journal")
    p.add_argument("--new", action="store_true",
                   help="whole plan: start a new restore even if an unfinished one of the same kind exists")
    p.add_argument("--parallel", type=int, default=4, metavar="N",
                   help="whole plan: steps of one level restored at once (default 4)")
    p.add_argument("--dry-run", action="store_true", help="print what would be done; change nothing")
    p.add_argument("--overwrite", action="store_true", help="replace items that exist and differ")
    p.add_argument("--identity", metavar="FILE", help="age identity file for secret content "
                   "(default: the file named by the plan's identity_env variable)")
    lock_wait_arg(p)
    p.add_argument("--remap", action="append", metavar="KEY=VALUE",
                   help="an exporter remap key (docs/restore.md lists them), repeatable")


def run(args: argparse.Namespace, out: Output) -> int:
    if args.source is None and (args.extra or args.remap):
        given = " ".join(a for a in [*args.extra, *(["--remap"] if args.remap else [])] if a.startswith("--"))
        raise UsageError(f"{given}: an exporter's options and --remap apply to one source: add --source "
                         "(a whole-plan restore takes its remaps from the plan's restore section)")
    if args.source is None:
        return _restore_plan(args, out)
    if args.failed or args.force or args.resume or args.new:
        raise UsageError("--failed, --force, --resume and --new plan a whole-plan restore: leave out --source")
    return _restore_source(args, out)


# -- one source --------------------------------------------------------------------------------
def _restore_source(args: argparse.Namespace, out: Output) -> int:
    plan, registry = open_plan(args)
    if args.source not in [s.name for s in plan.spec.sources]:
        raise UsageError(f"no source '{args.source}' in {args.plan}")
    to = _single_destination(args)
    keys = identities(args, plan)
    cls = registry.get(plan.source(args.source).type)
    request = RestoreRequest(to=to, dry_run=args.dry_run, overwrite=args.overwrite, remap=_remaps(args, cls))
    result = run_restore(plan, registry, args.source, args.snapshot, request=request,
                         identities=keys, target_name=args.target, lock_wait=args.lock_wait)
    verb = "would restore" if args.dry_run else "restored"
    out.say(f"snapshot {result.snapshot.short_id}, source {result.source}: {verb} to {to or '(default)'}")
    if result.failed_since:
        out.warn(f"source {result.source}: restoring its newest good backup, snapshot {result.snapshot.short_id} "
                 f"({result.snapshot.time:%Y-%m-%d %H:%M}Z); {result.failed_runs()}")
    out.say_lines(_outcome_lines(result.outcomes, quiet=out.quiet))
    counts = ", ".join(f"{n} {status}" for status, n in sorted(result.counts().items()))
    out.say(f"summary: {counts or 'nothing to restore'}")
    out.document(result.to_json())
    if result.failed:
        out.note(f"{len(result.failed)} items failed: " + "; ".join(o.item for o in result.failed[:10]))
        if result.damage:
            return _damaged(out, result.damage)
        return Exit.PARTIAL if len(result.failed) < len(result.outcomes) else Exit.FAILURE
    return Exit.OK


def _damaged(out: Output, damage: list[str]) -> int:
    """Exit 6: the restore met damaged data in the repository (whatever else happened)."""
    out.error(f"integrity: the repository's data is damaged ({len(damage)} problems; dr verify --read-data "
              f"lists every one): {damage[0]}")
    return Exit.INTEGRITY


# Under --quiet, items that went as asked are counted, not listed: a zone replay lists 50,000.
_AS_ASKED = {OutcomeStatus.RESTORED, OutcomeStatus.UNCHANGED, OutcomeStatus.PLANNED}


def _outcome_lines(outcomes: list, quiet: bool) -> list[str]:
    shown = [o for o in outcomes if not (quiet and o.status in _AS_ASKED)]
    lines = [f"  {o.status.value:<9} {o.item}" + (f": {o.reason}" if o.reason else "") for o in shown]
    if len(shown) < len(outcomes):
        lines.append(f"  ({len(outcomes) - len(shown)} items restored, unchanged or planned are not listed "
                     "under --quiet; --json lists every item)")
    return lines


def exporter_options(cls: type, source: str, extra: list[str]) -> dict[str, str]:
    """RestoreRequest.remap entries from the options the source's exporter declares
    (contract v2 restore_options), parsed from what the restore parser did not know."""
    parser = argparse.ArgumentParser(prog=f"dr restore --source {source}", add_help=False,
                                     exit_on_error=False)
    for option in cls.restore_options:
        if option.switch:  # a flag without a value
            parser.add_argument(f"--{option.flag}", dest=option.flag, action="store_const", const="true")
            continue
        parser.add_argument(f"--{option.flag}", dest=option.flag, metavar=option.metavar, help=option.help,
                            action="append" if option.pairs else "store")
    try:
        parsed, unknown = parser.parse_known_args(extra)
    except argparse.ArgumentError as exc:
        raise UsageError(f"{exc}") from None
    if unknown:
        known = ", ".join(f"--{o.flag} {o.metavar}".rstrip() for o in cls.restore_options) or "none"
        raise UsageError(f"unrecognized arguments: {' '.join(unknown)} (options of the {cls.type_name} "
                         f"exporter: {known})")
    remap: dict[str, str] = {}
    for option in cls.restore_options:
        value = getattr(parsed, option.flag)
        for item in (value if option.pairs else [value]) if value is not None else []:
            old, sep, new = item.partition("=")
            if option.pairs and not (sep and old and new):
                raise UsageError(f"--{option.flag}: expected OLD=NEW, found '{item}'")
            remap.update({f"{option.key}{old}": new} if option.pairs else {option.key: item})
    return remap


def _remaps(args: argparse.Namespace, cls: type) -> dict[str, str]:
    """Single-source remaps from the exporter's own options and --remap KEY=VALUE."""
    remap = exporter_options(cls, args.source, args.extra)
    for pair in args.remap or []:
        key, sep, value = pair.partition("=")
        if not (sep and key):
            raise UsageError(f"--remap: expected KEY=VALUE, found '{pair}'")
        remap[key] = value
    return remap


def _single_destination(args: argparse.Namespace) -> str | None:
    """--to for one source: DEST, or SOURCE=DEST naming that source (a URL may hold '=' itself)."""
    values = args.to or []
    if len(values) > 1:
        raise UsageError("--to: a single-source restore has one destination")
    if not values:
        return None
    name, sep, dest = values[0].partition("=")
    return dest if sep and name == args.source else values[0]


# -- the whole plan ----------------------------------------------------------------------------
def _restore_plan(args: argparse.Namespace, out: Output) -> int:
    plan, registry = open_plan(args)
    failed = args.failed or []
    destinations, problems = parse_destinations(args.to or [], [s.name for s in plan.spec.sources])
    if problems:
        raise UsageError("; ".join(problems))
    try:
        target = choose_restore_target(plan, failed, args.target)
    except UnknownDomain as exc:
        raise UsageError(f"--failed: {exc}") from None
    except NotInPlan as exc:
        raise UsageError(f"--target: {exc}") from None
    repo = open_target(plan, target)
    repo.open()
    with Lock(repo, exclusive=False, command=f"dr restore --plan {plan.name}").acquire(args.lock_wait):
        try:
            prepared = prepare(plan, repo, target, registry, snapshot_ref=args.snapshot, failed=failed,
                               destinations=destinations, force=args.force, identities=identities(args, plan))
        except (UnknownDomain, RestoreUsageError) as exc:
            raise UsageError(str(exc)) from None
        for line in plan_lines(prepared.restore_plan) + estimate_lines(prepared.estimate):
            out.say(line)
        if args.dry_run:
            out.document(prepared.to_json())
            return _dry_run_code(prepared.restore_plan)
        return _execute(args, out, plan, registry, prepared)


def _dry_run_code(restore_plan) -> int:
    """4 when any step would be refused: for blockers, or for a problem (no destination, no
    exporter, no data) whatever its verdict. A refused step is what the dry run exists to show,
    and a script gating on it must not read 0 (`REFUSED [blocker]` with exit 0 was issue 10)."""
    return Exit.BLOCKERS if any(step.status == REFUSED for step in restore_plan.steps) else Exit.OK


def _execute(args, out: Output, plan, registry, prepared) -> int:
    total = len(prepared.restore_plan.steps)
    try:
        run = run_plan_restore(prepared, registry, identities=identities(args, plan), overwrite=args.overwrite,
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
    if run.damage and run.count("failed"):
        return _damaged(out, run.damage)
    if run.count("failed") == 0 and run.count("refused"):
        return Exit.BLOCKERS  # what ran succeeded; the rest was refused (or held behind what was)
    return Exit.PARTIAL if run.count("succeeded") else Exit.FAILURE


RESTORE = CommandSpec("restore", help_of("restore"), arguments, run)
