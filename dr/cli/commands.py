"""The commands. Each is a small function from parsed arguments to an exit code."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Callable

from dr.backup import run_backup
from dr.cli.exitcodes import Exit
from dr.cli.output import Output, human_size
from dr.exporters.contract import RestoreRequest
from dr.exporters.registry import Registry
from dr.model.plan_loading import load_plan
from dr.model.plans import Plan
from dr.model.retention import snapshots_to_forget
from dr.repository import checking, encryption, pruning
from dr.repository.locks import Lock, remove_locks
from dr.repository.targets import choose_target, open_target
from dr.restore import run_restore


class UsageError(Exception):
    pass


@dataclass
class CommandSpec:
    name: str
    help: str
    arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace, Output], int]


def _plan(args: argparse.Namespace) -> tuple[Plan, Registry]:
    registry = Registry()
    return load_plan(args.plan, registry), registry


def _open_repository(args: argparse.Namespace):
    """(plan, its chosen target, that target's opened repository) for the repository commands."""
    plan, _ = _plan(args)
    target = choose_target(plan, args.target)
    repo = open_target(plan, target)
    repo.open()
    return plan, target, repo


def _plan_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--plan", required=True, metavar="FILE", help="the DR plan (YAML)")


def _target_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--target", metavar="NAME", help="which target (default: the first that survives "
                   "every protected domain)")


# -- backup ------------------------------------------------------------------------------------
def _backup_args(p: argparse.ArgumentParser) -> None:
    _plan_arg(p)
    p.add_argument("--source", action="append", metavar="NAME", help="only this source (repeatable)")
    p.add_argument("--lock-wait", type=float, default=0.0, metavar="SECONDS",
                   help="wait this long for another dr process to release the repository")


def backup(args: argparse.Namespace, out: Output) -> int:
    plan, registry = _plan(args)
    with out.progress("backup") as advance:
        try:
            results = run_backup(plan, registry, args.source, lock_wait=args.lock_wait,
                                 on_progress=advance, log=out.note)
        except KeyError as exc:
            raise UsageError(exc.args[0]) from None
    failed = False
    for result in results:
        for warning in result.warnings:
            out.note(f"warning: {warning}")
        _print_backup(out, result)
        failed |= bool(result.failed_sources) or result.snapshot is None
    out.document({"results": [r.to_json() for r in results]})
    if all(r.snapshot is None for r in results):
        return Exit.FAILURE
    return Exit.PARTIAL if failed else Exit.OK


def _transferred(stats: dict) -> str:
    """Checkpoint DR copies are written by the exporter, not through the repository."""
    copied = stats.get("bytes_transferred", 0)
    return f", {human_size(copied)} written to DR copies outside the repository" if copied else ""


def _print_backup(out: Output, result) -> None:
    snap = result.snapshot
    if snap is None:
        out.say(f"{result.target}: no snapshot written: every source failed")
    else:
        stats = snap.stats
        out.say(f"{result.target}: snapshot {snap.short_id} written to {result.repository}: "
                f"{stats['artifacts']} artifacts, {human_size(stats['bytes_read'])} read, "
                f"{human_size(stats['bytes_uploaded'])} uploaded in {stats['blobs_uploaded']} new blobs, "
                f"{stats['artifacts_reused']} unchanged artifacts reused{_transferred(stats)}")
    for source in result.sources:
        state = "ok" if source.ok else f"FAILED: {source.error}"
        out.say(f"  {source.name} ({source.exporter}): {source.artifacts} artifacts, "
                f"{human_size(source.bytes)} - {state}")
        for finding in source.findings:
            out.say(f"    {finding['severity']}: {finding['message']}")


# -- snapshots ---------------------------------------------------------------------------------
def _snapshots_args(p: argparse.ArgumentParser) -> None:
    _plan_arg(p)
    _target_arg(p)


def snapshots(args: argparse.Namespace, out: Output) -> int:
    _, target, repo = _open_repository(args)
    snaps = repo.snapshots()
    out.say(f"{len(snaps)} snapshots in {repo.description} (target {target.name})")
    for snap in snaps:
        sources = ", ".join(s.name + ("" if s.ok else " (failed)") for s in snap.sources)
        out.say(f"  {snap.short_id}  {snap.time:%Y-%m-%d %H:%M:%S}Z  {snap.catalog_entries:>7} artifacts  "
                f"{human_size(snap.held_bytes):>10}  {sources}")
    out.document({"target": target.name, "repository": repo.description, "snapshots": [
        {"id": s.id, **s.to_json()} for s in snaps]})
    return Exit.OK


# -- verify ------------------------------------------------------------------------------------
def _verify_args(p: argparse.ArgumentParser) -> None:
    _plan_arg(p)
    _target_arg(p)
    p.add_argument("--snapshot", metavar="ID", help="only this snapshot (id prefix or 'latest')")
    p.add_argument("--read-data", action="store_true", help="download every blob and check its digest")


def verify(args: argparse.Namespace, out: Output) -> int:
    _, _, repo = _open_repository(args)
    with Lock(repo, exclusive=False, command="dr verify").acquire():
        ids = [repo.find_snapshot(args.snapshot).id] if args.snapshot else None
        with out.progress("verify") as advance:
            report = checking.check(repo, ids, read_data=args.read_data, on_blob=advance)
    depth = f"{report.blobs_checked} blobs ({human_size(report.bytes_read)}) read and hashed" \
        if args.read_data else "blobs checked for presence (add --read-data to hash every byte)"
    out.say(f"{repo.description}: {report.snapshots} snapshots, {report.artifacts} artifacts; {depth}")
    for problem in report.problems:
        out.say(f"  PROBLEM: {problem}")
    out.say("no problems found" if report.ok else f"{len(report.problems)} problems found")
    out.document(report.to_json())
    return Exit.OK if report.ok else Exit.INTEGRITY


# -- restore -----------------------------------------------------------------------------------
def _restore_args(p: argparse.ArgumentParser) -> None:
    p.epilog = RESTORE_EPILOG
    p.set_defaults(accepts_exporter_options=True)  # the source's exporter parses what is left
    _plan_arg(p)
    _target_arg(p)
    p.add_argument("--snapshot", default="latest", metavar="ID", help="id prefix or 'latest' (default)")
    p.add_argument("--source", metavar="NAME", help="restore only this source; without it every source of "
                   "the snapshot is planned together, ordered, judged and journaled (docs/restore.md)")
    p.add_argument("--to", action="append", metavar="[SOURCE=]DEST",
                   help="where to restore (exporter-specific: a directory, a remote URL, a kube context); "
                        "repeatable as SOURCE=DEST when restoring the whole plan")
    p.add_argument("--failed", action="append", metavar="DOMAIN",
                   help="whole plan: a failure domain that is gone (repeatable); steps that need it are refused")
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
    p.add_argument("--lock-wait", type=float, default=0.0, metavar="SECONDS")
    p.add_argument("--remap", action="append", metavar="KEY=VALUE",
                   help="an exporter remap key (docs/restore.md lists them), repeatable")


RESTORE_EPILOG = ("With --source, the source's exporter may declare restore options of its own (for "
                  "example --namespace-map OLD=NEW); `dr plugins` lists every installed exporter's restore "
                  "options and the remap kinds it applies.")


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


def restore(args: argparse.Namespace, out: Output) -> int:
    if args.source is None and (args.extra or args.remap):
        given = " ".join(a for a in [*args.extra, *(["--remap"] if args.remap else [])] if a.startswith("--"))
        raise UsageError(f"{given}: an exporter's options and --remap apply to one source: add --source "
                         "(a whole-plan restore takes its remaps from the plan's restore section)")
    if args.source is None:
        from dr.cli.recovery_commands import restore_plan

        return restore_plan(args, out)
    if args.failed or args.force or args.resume or args.new:
        raise UsageError("--failed, --force, --resume and --new plan a whole-plan restore: leave out --source")
    plan, registry = _plan(args)
    if args.source not in [s.name for s in plan.spec.sources]:
        raise UsageError(f"no source '{args.source}' in {args.plan}")
    to = _single_destination(args)
    identities = encryption.load_identities(args.identity) if args.identity else \
        encryption.identities_from_env(plan.spec.encryption.identity_env)
    cls = registry.get(plan.source(args.source).type)
    request = RestoreRequest(to=to, dry_run=args.dry_run, overwrite=args.overwrite, remap=_remaps(args, cls))
    result = run_restore(plan, registry, args.source, args.snapshot, request=request,
                         identities=identities, target_name=args.target, lock_wait=args.lock_wait)
    verb = "would restore" if args.dry_run else "restored"
    out.say(f"snapshot {result.snapshot.short_id}, source {result.source}: {verb} to {to or '(default)'}")
    for outcome in result.outcomes:
        out.say(f"  {outcome.status.value:<9} {outcome.item}" + (f": {outcome.reason}" if outcome.reason else ""))
    counts = ", ".join(f"{n} {status}" for status, n in sorted(result.counts().items()))
    out.say(f"summary: {counts or 'nothing to restore'}")
    out.document(result.to_json())
    if result.failed:
        out.note(f"{len(result.failed)} items failed: " + "; ".join(o.item for o in result.failed[:10]))
        return Exit.PARTIAL if len(result.failed) < len(result.outcomes) else Exit.FAILURE
    return Exit.OK


# -- prune -------------------------------------------------------------------------------------
def _prune_args(p: argparse.ArgumentParser) -> None:
    _plan_arg(p)
    _target_arg(p)
    p.add_argument("--dry-run", action="store_true", help="say what would be removed; remove nothing")


def prune(args: argparse.Namespace, out: Output) -> int:
    plan, _, repo = _open_repository(args)
    with Lock(repo, exclusive=True, command="dr prune").acquire():
        snaps = repo.snapshots()
        policies = [(s.name, plan.retention_for(s).model_dump()) for s in plan.spec.sources]
        forget = snapshots_to_forget(snaps, policies)
        report = pruning.prune(repo, forget, dry_run=args.dry_run)
    verb = "would forget" if args.dry_run else "forgot"
    out.say(f"{repo.description}: {verb} {len(forget)} of {len(snaps)} snapshots; "
            f"{report.blobs_deleted} unreferenced blobs ({human_size(report.bytes_freed)}) "
            f"{'would be ' if args.dry_run else ''}removed, {report.blobs_kept} kept")
    out.document(report.to_json())
    return Exit.OK


# -- plugins, unlock ---------------------------------------------------------------------------
def plugins(args: argparse.Namespace, out: Output) -> int:
    infos = Registry().info()
    for info in infos:
        state = f"ERROR: {info.error}" if info.error else info.summary
        out.say(f"{info.name:<14} contract v{info.contract_version}  {info.value}\n{'':<14} {state}")
        for option in info.restore_options:
            out.say(f"{'':<14} restore option {option}")
        if info.remap_kinds:
            out.say(f"{'':<14} remap kinds: {', '.join(info.remap_kinds)}")
    out.document([info.__dict__ for info in infos])
    return Exit.FAILURE if any(i.error for i in infos) else Exit.OK


def _unlock_args(p: argparse.ArgumentParser) -> None:
    _plan_arg(p)
    _target_arg(p)
    p.add_argument("--remove-all", action="store_true", help="remove every lock, not only stale ones")


def unlock(args: argparse.Namespace, out: Output) -> int:
    _, _, repo = _open_repository(args)
    removed = remove_locks(repo, all_locks=args.remove_all)
    out.say(f"removed {len(removed)} lock(s)" + "".join(f"\n  {r}" for r in removed))
    out.document({"removed": removed})
    return Exit.OK


def _demo_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--dir", default="demo-output", help="where the demo builds its stand-ins (default ./demo-output)")
    p.add_argument("--kubeconfig", metavar="FILE", help="a kubeconfig with contexts 'cluster-a' (a stand-in "
                   "cluster to back up) and 'recovery' (an empty one to restore into); scripts/demo starts "
                   "emulated ones")


def demo(args: argparse.Namespace, out: Output) -> int:
    from dr.cli.demo import run_demo

    return run_demo(args.dir, out, args.kubeconfig)


COMMANDS = [
    CommandSpec("backup", "back up the plan's sources into a new snapshot", _backup_args, backup),
    CommandSpec("snapshots", "list the snapshots in a target", _snapshots_args, snapshots),
    CommandSpec("verify", "check snapshots and blobs (--read-data hashes every byte)", _verify_args, verify),
    CommandSpec("restore", "restore every source of a snapshot as one ordered, journaled plan (or one "
                "source with --source)", _restore_args, restore),
    CommandSpec("prune", "forget snapshots retention no longer keeps; reclaim unreferenced blobs",
                _prune_args, prune),
    CommandSpec("plugins", "list the installed exporters", lambda p: None, plugins),
    CommandSpec("unlock", "remove stale locks left by dead dr processes", _unlock_args, unlock),
    CommandSpec("demo", "back up, list, verify and restore local stand-ins: no cluster needed",
                _demo_args, demo),
]
