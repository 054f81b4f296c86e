"""`dr verify`: check snapshots, artifacts and blobs (dr.repository.checking.check), then the copies
exporters keep outside the repository (dr.restore.copies), both run by dr.verifying under one shared
lock; this module parses and prints; exit 6 on a problem. `--type TYPE`
checks the copies outside the repository of the plan's sources of one exporter type alone (images
in DR registries by digest, checkpoint DR copies), for a quick look without reading the rest of the
repository; the exporter's own verify_copies decides what that covers. `--read-data-subset N/T` reads one part of the blobs (dr.repository.data_subsets),
so that a daily job (`auto/7`) reads every blob within a week."""

from __future__ import annotations

import argparse
from datetime import datetime, timezone

from dr.cli.arguments import (CommandSpec, DeprecatedSwitch, UsageError, identities, lock_wait_arg, open_plan,
                              plan_and_target_args)
from dr.cli.commands import help_of
from dr.cli.exitcodes import Exit
from dr.cli.metrics import metrics_args, publish
from dr.cli.output import Output, human_size
from dr.metrics.samples import verify_samples
from dr import verifying
from dr.repository import checking, data_subsets
from dr.repository.repositories import IntegrityError
from dr.repository.targets import choose_target, open_target


def arguments(p: argparse.ArgumentParser) -> None:
    plan_and_target_args(p)
    p.add_argument("--snapshot", metavar="ID", help="only this snapshot (id prefix or 'latest')")
    p.add_argument("--read-data", action="store_true", help="download every blob and check its digest, "
                   "reassemble every artifact as a restore would, and hash every file of the copies "
                   "exporters keep outside the repository (checkpoint DR copies, images in DR registries)")
    p.add_argument("--read-data-subset", metavar="N/T", help="as --read-data, for part N of T of the blobs "
                   "(a blob's part is its digest's first 8 hex digits mod T, plus 1) and the artifacts whose "
                   "digest is in it; auto/T: today's part (UTC days since 1970-01-01 mod T, plus 1), so a daily "
                   "run reads every blob within T days. Copies outside the repository are checked as without "
                   "--read-data")
    lock_wait_arg(p)
    p.add_argument("--type", metavar="TYPE", help="only the copies that the plan's sources of this exporter "
                   "type keep outside the repository, as their exporter checks them (images: each DR registry "
                   "copy's tags, manifests hashed, blobs present with their sizes, hashed with --read-data, and "
                   "image blobs kept in the repository; checkpoints: each DR copy's manifest, marker and files); "
                   "the rest of the repository is not checked, and no dr_verify_* metrics are written")
    p.add_argument("--images", dest="type", action=DeprecatedSwitch, const="images", replacement="--type images",
                   help="deprecated: --type images")
    p.add_argument("--identity", metavar="FILE", help="age identity file: also decrypt secret artifacts and "
                   "check them as a restore would (default: the file named by the plan's identity_env)")
    metrics_args(p)


def run(args: argparse.Namespace, out: Output) -> int:
    subset = _subset(args)
    plan, registry = open_plan(args)
    target = choose_target(plan, args.target)
    repo = open_target(plan, target)
    try:
        repo.open()
    except IntegrityError as exc:  # a finding like any damage: listed, counted, published
        return _unreadable_config(args, out, plan.name, target.name, subset, exc)
    keys = identities(args, plan)
    if args.type:
        return _type_only(args, out, plan, registry, repo, keys)
    with out.progress("verify") as advance:
        verified = verifying.verify_all(plan, registry, repo, snapshot=args.snapshot, read_data=args.read_data,
                                        subset=subset, identities=keys, lock_wait=args.lock_wait, on_blob=advance)
    report, outside = verified.report, verified.outside
    out.say(f"{repo.description}: {report.snapshots} snapshots, {report.artifacts} artifacts; "
            f"{_depth(report, args.read_data, subset)}")
    for problem in report.problems:
        out.say(f"  PROBLEM: {problem}")
    for note in report.notes:
        out.note(note)
    problems = len(report.problems) + _say_copies(outside, out, args.read_data)
    publish(args, out, lambda now: verify_samples(plan.name, target.name, problems, args.read_data, now))
    return _ended(out, problems, {**report.to_json(), "outside_copies": [c.to_json() for c in outside],
                                  "read_data_subset": str(subset) if subset else None})


def _unreadable_config(args: argparse.Namespace, out: Output, plan: str, target: str,
                       subset: data_subsets.DataSubset | None, damage: IntegrityError) -> int:
    """A reader checks the config before anything else (format.md section 6, 14): nothing more is read."""
    report = checking.CheckReport(problems=[str(damage)],
                                  notes=["nothing else was checked: a reader must understand the config first "
                                         "(docs/format.md section 6)"])
    out.say(f"  PROBLEM: {damage}")
    for note in report.notes:
        out.note(note)
    publish(args, out, lambda now: verify_samples(plan, target, 1, args.read_data, now))
    return _ended(out, 1, {**report.to_json(), "outside_copies": [],
                           "read_data_subset": str(subset) if subset else None})


def _subset(args: argparse.Namespace) -> data_subsets.DataSubset | None:
    if not args.read_data_subset:
        return None
    if args.read_data:
        raise UsageError("--read-data reads every blob and --read-data-subset a part of them: give one")
    try:
        return data_subsets.parse(args.read_data_subset, datetime.now(timezone.utc).date())
    except data_subsets.SubsetError as exc:
        raise UsageError(str(exc)) from None


def _depth(report: checking.CheckReport, read_data: bool, subset: data_subsets.DataSubset | None) -> str:
    read = f"{report.blobs_checked} blobs ({human_size(report.bytes_read)}) read and hashed"
    if subset:
        return f"{read}: part {subset} of the blobs (--read-data-subset); the rest checked for presence"
    return read if read_data else "blobs checked for presence (add --read-data to hash every byte)"


def _ended(out: Output, problems: int, document: dict) -> int:
    out.say("no problems found" if not problems else f"{problems} problems found")
    out.document({**document, "ok": not problems})
    return Exit.OK if not problems else Exit.INTEGRITY


def _type_only(args: argparse.Namespace, out: Output, plan, registry, repo, keys) -> int:
    if args.metrics_file or args.pushgateway:  # dr_verify_* say the whole repository was checked
        raise UsageError("--type checks a part of what dr verify checks, so it writes no dr_verify_* metrics: "
                         "drop --metrics-file/--pushgateway, or --type")
    try:
        verified = verifying.verify_type(plan, registry, repo, args.type, snapshot=args.snapshot,
                                         read_data=args.read_data, identities=keys, lock_wait=args.lock_wait)
    except verifying.NoSourceOfType as exc:
        raise UsageError(f"--type {args.type}: {args.plan} has {exc}; drop --type to verify everything") from None
    outside, unchecked = verified.outside, verified.unchecked
    if unchecked:  # said, not skipped silently
        out.warn(f"{', '.join(unchecked)}: no copy outside the repository recorded in any snapshot, nothing to "
                 "verify")
    problems = _say_copies(outside, out, args.read_data, damage_counts=True)
    return _ended(out, problems, {"scope": args.type, "outside_copies": [c.to_json() for c in outside],
                                  "nothing_to_verify": unchecked})


def _say_copies(outside, out: Output, read_data: bool, damage_counts: bool = False) -> int:
    """Print each source's outside copies; return how many problems they have. A catalog too
    damaged to say which copies there are is the repository check's problem (counted there),
    unless that check did not run (`damage_counts`: --type)."""
    problems = 0
    for found in outside:
        if found.unchecked:
            if damage_counts:
                out.say(f"  PROBLEM: {found.source}: {found.unchecked}")
                problems += 1
            else:
                out.note(f"{found.source}: copies outside the repository not checked: {found.unchecked}")
            continue
        bad = [r for r in found.reports if not r.ok]
        how = "every byte hashed" if read_data else "manifests and sizes checked (add --read-data to hash every byte)"
        out.say(f"{found.source}: {len(found.reports)} copies outside the repository (snapshot {found.snapshot}), "
                f"{len(bad)} damaged; {how}")
        for report in bad:
            for problem in report.problems:
                out.say(f"  PROBLEM: {report.what} at {report.where}: {problem}")
                problems += 1
    return problems


VERIFY = CommandSpec("verify", help_of("verify"), arguments, run)
