"""`dr deploy render`: the plan as Kubernetes objects, or as a Helm chart (dr.deploy)."""

from __future__ import annotations

import argparse
import os
import sys

from dr.cli.arguments import CommandSpec, Renamed, UsageError, open_plan, plan_arg
from dr.cli.commands import help_of
from dr.cli.exitcodes import Exit
from dr.cli.output import Output, emit
from dr.deploy import RenderError, render
from dr.deploy.helm import chart
from dr.deploy.rendering import DEFAULT_NAMESPACE
from dr.deploy.writing import write_chart, write_file, yaml_stream


def arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("action", choices=["render"], help="render: write the objects that run the plan's backups")
    plan_arg(p)
    p.add_argument("--namespace", default=DEFAULT_NAMESPACE, metavar="NS",
                   help=f"where the CronJobs run (default {DEFAULT_NAMESPACE})")
    p.add_argument("--image", metavar="REF", help="dr's image (default: the plan's dr_image; given, it replaces "
                   "dr_image in the rendered plan so the audit judges the image that runs)")
    p.add_argument("--pushgateway", metavar="URL", help="every CronJob pushes its metrics there (docs/metrics.md), "
                   "and the NetworkPolicy allows it; its password, if any, from the Secret's pushgateway-password")
    p.add_argument("--api-server-cidr", action="append", default=[], metavar="CIDR",
                   help="the API server's addresses (kubectl get endpoints kubernetes): the NetworkPolicy allows "
                   "only these on 443 and 6443 (default: those ports to any address, said in a note); repeatable")
    p.add_argument("--format", choices=["yaml", "helm"], default="yaml",
                   help="yaml: one stream of objects; helm: a chart directory (needs --out)")
    p.add_argument("--out", "--output", action=Renamed, metavar="PATH", help="the file (yaml) or directory "
                   "(helm) to write; default for yaml: stdout (--output: its old spelling, deprecated)")


def run(args: argparse.Namespace, out: Output) -> int:
    if args.format == "helm" and not args.out:
        raise UsageError("--format helm writes a chart directory: give it with --out DIR")
    plan, registry = open_plan(args)
    with open(args.plan, encoding="utf-8") as handle:
        plan_text = handle.read()
    try:
        rendering = render(plan, registry, plan_text, args.namespace, args.image, args.pushgateway,
                           args.api_server_cidr)
    except (RenderError, ValueError) as exc:  # ValueError: a --api-server-cidr that is not one
        raise UsageError(str(exc)) from exc
    name = os.path.basename(args.plan)
    document = rendering.report()
    if args.format == "helm":
        write_chart(args.out, chart(rendering, name))
    elif args.out:
        write_file(args.out, yaml_stream(rendering, name))
    elif args.json:
        document["manifest"] = yaml_stream(rendering, name)
    else:
        emit(sys.stdout, yaml_stream(rendering, name))
    document["written"] = args.out
    _report(out, rendering, args.out)
    out.document(document)
    return Exit.OK


def _report(out: Output, rendering, written: str | None) -> None:
    """On stderr when the manifest is on stdout, so the stream stays applicable."""
    say = out.say if written else out.note
    if written:
        say(f"wrote {len(rendering.docs)} objects to {written}")
    for group in rendering.groups:
        say(f"CronJob {group.name}: {group.schedule!r}: {', '.join(group.sources)}")
    for job in rendering.jobs[len(rendering.groups):]:
        say(f"CronJob {job.name}: {job.schedule!r}: {' '.join(job.command[1:2] + job.command[4:])}")
    if rendering.left_out:
        say(f"left out (no schedule): {', '.join(rendering.left_out)}")
    for note in rendering.notes:
        say(f"note: {note}")
    keys = ", ".join(k["key"] for k in rendering.secret_keys) or "none"
    say(f"create Secret dr-credentials in {rendering.namespace} with keys: {keys}")
    for claim in rendering.claims:
        say(f"provide PersistentVolumeClaim {claim['name']} (mounted read-only at {claim['mount']})")


DEPLOY = CommandSpec("deploy", help_of("deploy"), arguments, run)
