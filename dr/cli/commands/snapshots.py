"""`dr snapshots`: list the snapshots in a target."""

from __future__ import annotations

import argparse

from dr.cli.arguments import CommandSpec, open_repository, plan_and_target_args
from dr.cli.commands import help_of
from dr.cli.exitcodes import Exit
from dr.cli.output import Output, human_size


def run(args: argparse.Namespace, out: Output) -> int:
    _, target, repo = open_repository(args)
    snaps, damaged = repo.intact_snapshots()
    snaps = _chosen(snaps, args)
    out.say(f"{len(snaps)} snapshots in {repo.description} (target {target.name})"
            + (f", and {len(damaged)} damaged ones (exit 6)" if damaged else ""))
    for snap in snaps:
        sources = ", ".join(s.name + ("" if s.good else " (failed)") for s in snap.sources)
        out.say(f"  {snap.short_id}  {snap.time:%Y-%m-%d %H:%M:%S}Z  {snap.catalog_entries:>7} artifacts  "
                f"{human_size(snap.held_bytes):>10}  {sources}")
    for snapshot_id, problem in damaged.items():
        out.say(f"  {snapshot_id[:8]}  DAMAGED: {problem}")
    out.document({"target": target.name, "repository": repo.description, "snapshots": [
        {"id": s.id, **s.to_json()} for s in snaps], "damaged": damaged})
    return Exit.INTEGRITY if damaged else Exit.OK


def _chosen(snaps: list, args: argparse.Namespace) -> list:
    """--source: the snapshots holding that source; --latest: of those, the newest only."""
    if args.source:
        snaps = [s for s in snaps if any(part.name == args.source for part in s.sources)]
    return sorted(snaps, key=lambda s: s.time)[-1:] if args.latest else snaps


def arguments(p: argparse.ArgumentParser) -> None:
    plan_and_target_args(p)
    p.add_argument("--source", metavar="NAME", help="only the snapshots that hold this source")
    p.add_argument("--latest", action="store_true", help="only the newest snapshot (of --source's, if given)")


SNAPSHOTS = CommandSpec("snapshots", help_of("snapshots"), arguments, run)
