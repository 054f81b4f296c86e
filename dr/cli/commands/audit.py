"""`dr audit`: if these failure domains are gone, can we recover from what is left?

Reads one snapshot's catalog from a target and judges every dependency of the restore in each
scenario (dr.audit). Prints or writes a Markdown, JSON or HTML report; exits 4 when any
blocker was found, 0 otherwise, 2 for a usage error (an unknown --failed domain is named with
the nearest valid one). With --readiness the report adds the readiness scenario; its findings
are warnings (exit 0) unless --strict makes them blockers (exit 4).

The plan is loaded without exporter plugins: the audit reads catalogs, never runs an
exporter, so it works on a recovery laptop where the plugins are not installed. The installed
exporters are asked only what they declare (contract v2 restore_needs: needs met by any one of
several references), exactly as restore planning asks them; a source whose exporter is not
installed has each dependency judged on its own. With --live it
loads them, and each source's exporter discovers what exists now: what the snapshot lacks is a
`not-backed-up` finding (dr.audit.coverage).
"""

from __future__ import annotations

import argparse

from dr.audit import UnknownDomain, choose_audited_target, run_audit, scenarios_for
from dr.audit.reports_html import render_html
from dr.audit.reports_json import render_json, to_document
from dr.audit.reports_md import render_markdown
from dr.audit.revealing import Revealer
from dr.cli.arguments import CommandSpec, UsageError, deprecated, plan_arg, with_cluster_flags
from dr.cli.commands import help_of
from dr.cli.exitcodes import Exit
from dr.cli.metrics import metrics_args, publish
from dr.cli.output import Output, deliver
from dr.contract.registry import Registry
from dr.metrics.samples import audit_samples
from dr.model.plan_loading import load_plan
from dr.model.plans import NotInPlan
from dr.planner.planning import planning_exporters
from dr.repository import encryption, names
from dr.repository.targets import open_target

RENDERERS = {"md": render_markdown, "json": render_json, "html": render_html}


def arguments(p: argparse.ArgumentParser) -> None:
    plan_arg(p)
    p.add_argument("--failed", action="append", metavar="DOMAIN",
                   help="a failure domain that is gone (repeatable: all fail at once); default: one "
                        "scenario per domain in the plan's protects_against"
                        "; or kind:KIND (every location of that kind in a protected domain, e.g. kind:registry) or location:NAME: locations that fail while their domains stay up")
    p.add_argument("--snapshot", default="latest", metavar="ID", help="id prefix or 'latest' (default)")
    p.add_argument("--format", choices=sorted(RENDERERS), metavar="{md,html}", help="report format (default md; "
                   "--json for JSON; --format json: its old spelling, deprecated)")
    p.add_argument("--out", metavar="FILE", help="write the report here instead of stdout")
    p.add_argument("--strict", action="store_true",
                   help="a reference nothing places, or something not backed up (--live), or a readiness "
                        "warning (--readiness), is a blocker, not a warning")
    p.add_argument("--readiness", action="store_true",
                   help="also list the readiness scenario: the go-live findings the backup recorded "
                        "(disruption budgets, serving high availability, spot capacity), each with its runbook")
    p.add_argument("--live", action="store_true",
                   help="also run each source's exporter discovery and report what exists now but "
                        "is not in the snapshot (needs the exporter plugins and access to the sources)")
    p.add_argument("--target", metavar="NAME", help="read the snapshot from this target (default: the "
                   "first that survives every scenario)")
    p.add_argument("--identity", metavar="FILE", help="age identity file: name sealed secrets (docs/format.md "
                   "8.1) by their names in the report instead of their keyed digests; the verdicts are the same "
                   "without it (never read from the plan's identity_env: reports are often published)")
    metrics_args(p)


def run(args: argparse.Namespace, out: Output) -> int:
    live = getattr(args, "live", False)
    if args.format == "json":
        deprecated("dr audit --format json", "--json")
    registry = Registry()
    plan = with_cluster_flags(load_plan(args.plan, registry), args) if live else load_plan(args.plan)
    try:
        scenarios = scenarios_for(plan, args.failed)
    except UnknownDomain as exc:
        raise UsageError(f"--failed: {exc}") from None
    try:
        target = choose_audited_target(plan, scenarios, args.target)
    except NotInPlan as exc:
        raise UsageError(f"--target: {exc}") from None
    repo = open_target(plan, target)
    repo.open()
    revealer = _revealer(args, plan)
    report = run_audit(plan, repo, target, scenarios, snapshot_ref=args.snapshot, strict=args.strict,
                       live=registry if live else None, readiness=args.readiness,
                       exporters=planning_exporters(plan, registry), revealer=revealer)
    fmt = args.format or ("json" if getattr(args, "json", False) else "md")
    text = RENDERERS[fmt](report)
    if revealer is not None:
        text = revealer.reveal(text, fmt)
        if revealer.unopened:
            out.warn(f"{revealer.unopened} sealed line(s) of the snapshot do not open with --identity: they stay "
                     "named by their keyed digests (written to other recipients, or damaged: dr verify checks them)")
    deliver(out, text, args.out, "report")
    out.note(report.summary_line())
    publish(args, out, lambda now: audit_samples(to_document(report), now))
    return Exit.BLOCKERS if report.blocked else Exit.OK


def _revealer(args: argparse.Namespace, plan) -> Revealer | None:
    if not args.identity:
        return None
    return Revealer(encryption.load_identities(args.identity), names.plan_name_key(plan.spec.encryption.recipients))


AUDIT = CommandSpec("audit", help_of("audit"), arguments, run)
