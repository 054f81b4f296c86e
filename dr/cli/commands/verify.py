"""`dr verify`: check snapshots and blobs (dr.repository.checking.verify); exit 6 on a problem."""

from __future__ import annotations

import argparse

from dr.cli.arguments import CommandSpec, open_repository, plan_and_target_args
from dr.cli.exitcodes import Exit
from dr.cli.output import Output, human_size
from dr.repository import checking


def arguments(p: argparse.ArgumentParser) -> None:
    plan_and_target_args(p)
    p.add_argument("--snapshot", metavar="ID", help="only this snapshot (id prefix or 'latest')")
    p.add_argument("--read-data", action="store_true", help="download every blob and check its digest")


def run(args: argparse.Namespace, out: Output) -> int:
    _, _, repo = open_repository(args)
    with out.progress("verify") as advance:
        report = checking.verify(repo, args.snapshot, read_data=args.read_data, on_blob=advance)
    depth = f"{report.blobs_checked} blobs ({human_size(report.bytes_read)}) read and hashed" \
        if args.read_data else "blobs checked for presence (add --read-data to hash every byte)"
    out.say(f"{repo.description}: {report.snapshots} snapshots, {report.artifacts} artifacts; {depth}")
    for problem in report.problems:
        out.say(f"  PROBLEM: {problem}")
    out.say("no problems found" if report.ok else f"{len(report.problems)} problems found")
    out.document(report.to_json())
    return Exit.OK if report.ok else Exit.INTEGRITY


VERIFY = CommandSpec("verify", "check snapshots and blobs (--read-data hashes every byte)", arguments, run)
