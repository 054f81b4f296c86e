"""`dr drill`: audit, restore into a scratch target, verify, and record measured RPO/RTO
(dr.drills); `--history` shows past drills and their trend.

Exit 0 recovered, 3 partial, 1 failed (the record is written in every case). `--training RUN`
resumes a training run from its DR copy instead (dr.drills.training): the same exit codes, where
partial means the run continued but did not reach steady throughput in the steps trained. `--matrix` drills
every protected scenario one after another (dr.drills.matrix): 0 when all recovered, 1 when
all failed, 3 otherwise.
"""

from __future__ import annotations

import argparse
import os

from dr.cli.arguments import CommandSpec, UsageError, identities, lock_wait_arg, open_plan, plan_arg
from dr.cli.commands import help_of
from dr.cli.exitcodes import Exit
from dr.cli.metrics import metrics_args, publish, wanted
from dr.cli.output import Output, deliver
from dr.metrics.samples import drill_samples, training_samples
from dr.model.plan_loading import load_plan
from dr.model.recovery import UnknownDomain
from dr.planner.destinations import parse_destinations
from dr.repository.targets import choose_target, open_target
from dr.restore import RestoreUsageError
from dr.restore.describing import plan_lines, progress_line


def arguments(p: argparse.ArgumentParser) -> None:
    plan_arg(p)
    p.add_argument("--failed", action="append", metavar="DOMAIN",
                   help="a failure domain the drill pretends is gone (repeatable: all fail at once)"
                        "; or kind:KIND (every location of that kind in a protected domain, e.g. kind:registry) or location:NAME: locations that fail while their domains stay up")
    p.add_argument("--to", action="append", metavar="SCRATCH|SOURCE=DEST",
                   help="a scratch folder (each source restores into its own subfolder), and/or "
                        "SOURCE=DEST for a source (a kubernetes source needs a scratch cluster context)")
    p.add_argument("--matrix", action="store_true",
                   help="drill every scenario the plan protects against (each protects_against domain, then "
                        "registry loss and secret-store loss where the plan has such locations), one after "
                        "another, each into its own subfolder of the scratch folder, and print the measured RPO "
                        "and RTO per scenario and phase as one table; with --history: each matrix run so far")
    p.add_argument("--training", metavar="RUN",
                   help="a training recovery drill: restore RUN's newest checkpoint copy that survives --failed "
                        "into the scratch folder, run the plan's readiness.runs[].resume command there, and "
                        "measure the RTO of training by phase and the run's continuity (docs/readiness.md)")
    p.add_argument("--world-size", type=int, metavar="M",
                   help="with --training: the world size to resume at ({world_size} in the resume command; "
                        "default 1); a different one from the failed run's reshards the checkpoint")
    p.add_argument("--steps", type=int, metavar="N",
                   help="with --training: optimizer steps to train after the load (default: the plan's resume.steps)")
    p.add_argument("--kill-rank", type=int, metavar="R",
                   help="with --training and --at-step: a failure drill: SIGKILL rank R's worker once step K is "
                        "logged, and time the restart chain (detection and restart, rendezvous, load, first step, "
                        "steady throughput); the resume command's launcher must restart workers (torchrun "
                        "--max-restarts)")
    p.add_argument("--at-step", type=int, metavar="K", help="with --kill-rank: the step after which the rank is killed")
    p.add_argument("--incomplete", choices=["missing-shard", "truncated-shard"],
                   help="with --training: damage the restored copy first (remove, or cut in half, its largest "
                        "file) and pass only if the resume command refuses it")
    p.add_argument("--history", action="store_true", help="show the drill history and its trend instead")
    p.add_argument("--format", choices=["text", "html"], default="text",
                   help="with --history: text (default), or an HTML page charting measured RPO and RTO per "
                        "phase over time beside the plan's objectives (inline SVG, nothing fetched); with "
                        "--history --matrix: a chart per scenario over the matrix runs")
    p.add_argument("--out", metavar="FILE", help="with --history: write the history here instead of stdout")
    p.add_argument("--snapshot", default="latest", metavar="ID", help="id prefix or 'latest' (default)")
    p.add_argument("--target", metavar="NAME", help="read the snapshot from this target")
    p.add_argument("--force", action="store_true", help="restore blocked steps anyway (recorded)")
    p.add_argument("--identity", metavar="FILE", help="age identity file for secret content")
    p.add_argument("--parallel", type=int, default=4, metavar="N", help="steps restored at once (default 4)")
    lock_wait_arg(p)
    metrics_args(p)


def run(args: argparse.Namespace, out: Output) -> int:
    if not args.history and (args.format != "text" or args.out):
        raise UsageError("--format and --out go with --history (a drill prints its record; --json for JSON)")
    if args.format == "html" and args.json and not args.out:
        raise UsageError("--format html with --json: name the page's file with --out (stdout carries the JSON)")
    if args.history:
        if wanted(args):
            raise UsageError("--metrics-file and --pushgateway publish the measurements of the drill that "
                             "runs now; drop them with --history")
        return _history(args, out)
    # dr.drills is imported when a drill runs, not by every dr command (registering this one)
    from dr.drills import run_drill
    from dr.drills.describing import drill_lines

    if args.matrix:
        return _matrix(args, out)
    if args.training:
        return _training(args, out)
    if any(v is not None for v in (args.world_size, args.steps, args.kill_rank, args.at_step, args.incomplete)):
        raise UsageError("--world-size, --steps, --kill-rank, --at-step and --incomplete go with --training RUN")
    plan, registry = open_plan(args)
    if not args.failed or not args.to:
        raise UsageError("a drill needs --failed DOMAIN and --to SCRATCH (or SOURCE=DEST); "
                         "--history shows past drills")
    scratch, destinations = _drill_destinations(args.to, [s.name for s in plan.spec.sources])
    steps = {"total": 0}

    def on_plan(prepared) -> None:
        steps["total"] = len(prepared.restore_plan.steps)
        for line in plan_lines(prepared.restore_plan):
            out.note(line)

    try:
        record = run_drill(plan, registry, failed=args.failed, scratch=scratch, destinations=destinations,
                           snapshot_ref=args.snapshot, target_name=args.target, identities=identities(args, plan),
                           force=args.force, parallel=args.parallel, lock_wait=args.lock_wait,
                           on_plan=on_plan,
                           on_event=lambda kind, step, result: out.note(
                               progress_line(kind, step, result, steps["total"])))
    except (UnknownDomain, RestoreUsageError) as exc:
        raise UsageError(str(exc)) from None
    return _recorded(args, out, record, drill_lines(record))


def _recorded(args: argparse.Namespace, out: Output, record: dict, lines: list[str], samples=drill_samples) -> int:
    """Print and publish one drill's record; its exit code (0 recovered, 3 partial, else 1)."""
    for line in lines:
        out.say(line)
    out.document(record)
    publish(args, out, lambda now: samples(record, now))
    return {"recovered": Exit.OK, "partial": Exit.PARTIAL}.get(record["result"], Exit.FAILURE)


def _training(args: argparse.Namespace, out: Output) -> int:
    from dr.drills.describing import training_lines
    from dr.drills.training import TrainingDrillError, run_training_drill

    if not args.failed or not args.to or len(args.to) != 1 or "=" in args.to[0]:
        raise UsageError("a training drill needs --failed DOMAIN (the scenario its checkpoint copy must survive) "
                         "and --to SCRATCH (one folder: the checkpoint is restored and the run resumed there)")
    for flag, value in (("--world-size", args.world_size), ("--steps", args.steps), ("--at-step", args.at_step)):
        if value is not None and value < 1:
            raise UsageError(f"{flag} must be at least 1, not {value}")
    kill = _kill(args)
    plan, registry = open_plan(args)
    out.note(f"training drill: run {args.training}, world size {args.world_size or 1}")
    try:
        record = run_training_drill(plan, registry, args.training, world_size=args.world_size or 1,
                                    failed=args.failed, scratch=args.to[0], steps=args.steps,
                                    snapshot_ref=args.snapshot, target_name=args.target,
                                    identities=identities(args, plan), lock_wait=args.lock_wait,
                                    kill=kill, incomplete=args.incomplete)
    except (UnknownDomain, TrainingDrillError) as exc:
        raise UsageError(str(exc)) from None
    return _recorded(args, out, record, training_lines(record), training_samples)


def _kill(args: argparse.Namespace):
    """The failure drill's kill, or None; --kill-rank and --at-step come together."""
    from dr.drills.training.running import Kill

    if (args.kill_rank is None) != (args.at_step is None):
        raise UsageError("a failure drill needs both --kill-rank R and --at-step K")
    if args.kill_rank is None:
        return None
    if args.incomplete:
        raise UsageError("--incomplete drills a refused load; drop --kill-rank/--at-step (or --incomplete)")
    if args.kill_rank < 0 or (args.world_size and args.kill_rank >= args.world_size) or \
            (not args.world_size and args.kill_rank > 0):
        raise UsageError(f"--kill-rank {args.kill_rank}: a rank between 0 and the world size minus 1 "
                         f"({(args.world_size or 1) - 1})")
    return Kill(args.kill_rank, args.at_step)


def _matrix(args: argparse.Namespace, out: Output) -> int:
    from dr.drills.describing import matrix_lines
    from dr.drills.matrix import run_matrix

    if args.failed:
        raise UsageError("--matrix drills every domain of the plan's protects_against; drop --failed "
                         "(or drop --matrix to drill the named domains)")
    if not args.to:
        raise UsageError("a drill matrix needs --to SCRATCH (each scenario restores into its own subfolder), "
                         "and SOURCE=DEST for sources that need one (a scratch cluster)")
    plan, registry = open_plan(args)
    scratch, destinations = _drill_destinations(args.to, [s.name for s in plan.spec.sources])
    try:
        result = run_matrix(plan, registry, scratch=scratch, destinations=destinations,
                            on_drill=lambda s: out.note(f"drill: {s.label}"),
                            snapshot_ref=args.snapshot, target_name=args.target, identities=identities(args, plan),
                            force=args.force, parallel=args.parallel, lock_wait=args.lock_wait)
    except (UnknownDomain, RestoreUsageError) as exc:
        raise UsageError(str(exc)) from None
    for line in matrix_lines(result["rows"], f"drill matrix {result['id']} of plan {plan.name}: "
                             f"{len(result['rows'])} scenario(s)"):
        out.say(line)
    out.document(result)
    publish(args, out, lambda now: [s for r in result["drills"] for s in drill_samples(r, now)])
    results = {r["result"] for r in result["drills"]}
    if results == {"recovered"}:
        return Exit.OK
    return Exit.FAILURE if results == {"failed"} else Exit.PARTIAL


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
    """Without the exporter plugins: the history is records in the repository, nothing more."""
    from dr.drills import read_history, trend
    from dr.drills.describing import history_lines

    plan = load_plan(args.plan)
    target = choose_target(plan, args.target)
    repo = open_target(plan, target)
    repo.open()
    records = read_history(repo)
    if args.matrix:
        return _matrix_history(args, out, plan, records, target.name)
    summary = trend(records)
    if args.format == "html":
        _history_page(args, out, plan, target.name, records)
    else:
        _history_text(args, out, history_lines(records, summary, target.name))
    out.document({"target": target.name, "drills": records, "trend": summary})
    return Exit.OK


def _matrix_history(args: argparse.Namespace, out: Output, plan, records: list[dict], target: str) -> int:
    from dr.drills.describing import matrix_history_lines
    from dr.drills.matrix import matrices

    found = matrices(records)
    if args.format == "html":
        from dr.drills.matrix_html import render_matrix_history_html

        deliver(out, render_matrix_history_html(plan.name, target, found, _tightest(plan, "rto")), args.out,
                "drill matrix history")
    else:
        _history_text(args, out, matrix_history_lines(found, target))
    out.document({"target": target, "matrices": found})
    return Exit.OK


def _history_text(args: argparse.Namespace, out: Output, lines: list[str]) -> None:
    if args.out:
        deliver(out, "\n".join(lines) + "\n", args.out, "drill history")
        return
    for line in lines:  # on stdout unless --json (the JSON document carries the records)
        out.say(line)


def _history_page(args: argparse.Namespace, out: Output, plan, target: str, records: list[dict]) -> None:
    from dr.drills.history_html import render_history_html

    deliver(out, render_history_html(plan.name, target, records, _tightest(plan, "rto"), _tightest(plan, "rpo")),
            args.out, "drill history")


def _tightest(plan, kind: str):
    """The plan's tightest objective of this kind (rto, rpo) and its source, or None."""
    from dr.drills.history_html import Objective

    found = [(getattr(s, f"{kind}_delta").total_seconds(), s.name) for s in plan.spec.sources
             if getattr(s, f"{kind}_delta") is not None]
    return Objective(*min(found)) if found else None


DRILL = CommandSpec("drill", help_of("drill"), arguments, run)
