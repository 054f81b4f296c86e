"""`dr plan validate FILE...` and `dr plan schema`: a plan checked, and its JSON Schema, offline.

validate loads each plan exactly as every command does (structure, the installed exporters'
option models, the rules across fields) and stops there: no target is opened, no credential
read, no network reached, so CI can lint a pull request's plan. schema prints the JSON Schema
generated from the same models (dr.model.plan_schema), for editors and CI.
"""

from __future__ import annotations

import argparse
import json
import os

from dr.cli.arguments import CommandSpec, UsageError
from dr.cli.commands import help_of
from dr.cli.exitcodes import Exit
from dr.cli.output import Output, deliver
from dr.contract.registry import Registry
from dr.model.plan_loading import PlanError, load_plan
from dr.model.plan_schema import plan_schema


def arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("action", choices=["validate", "schema"], help="validate: check plan files offline; "
                   "schema: print the plan's JSON Schema")
    p.add_argument("files", nargs="*", metavar="FILE", help="validate: the plan files (default: the file "
                   "DR_PLAN names)")
    p.add_argument("--out", metavar="FILE", help="schema: write the schema here instead of stdout")


def run(args: argparse.Namespace, out: Output) -> int:
    return _schema(args, out) if args.action == "schema" else _validate(args, out)


def _validate(args: argparse.Namespace, out: Output) -> int:
    files = args.files or ([os.environ["DR_PLAN"]] if os.environ.get("DR_PLAN") else [])
    if not files:
        raise UsageError("dr plan validate: name the plan files (or set DR_PLAN)")
    registry = Registry()
    results = [_checked(path, registry) for path in files]
    for result in results:
        out.say(f"{result['file']}: " + ("valid" if result["valid"] else
                                         f"{len(result['problems'])} problem(s)"))
        out.say_lines([f"  {problem}" for problem in result["problems"]])
    out.document({"plans": results, "valid": all(r["valid"] for r in results)})
    return Exit.OK if all(r["valid"] for r in results) else Exit.USAGE


def _checked(path: str, registry: Registry) -> dict:
    try:
        plan = load_plan(path, registry)
    except PlanError as exc:
        return {"file": path, "valid": False, "problems": [str(p) for p in exc.problems]}
    return {"file": path, "valid": True, "problems": [], "name": plan.name,
            "sources": [s.name for s in plan.spec.sources], "targets": [t.name for t in plan.spec.targets]}


def _schema(args: argparse.Namespace, out: Output) -> int:
    if args.files:
        raise UsageError("dr plan schema takes no FILE (use --out FILE to write the schema to a file)")
    registry = Registry()
    schema = plan_schema({name: registry.options_model(name) for name in registry.names()})
    deliver(out, json.dumps(schema, indent=2, sort_keys=True) + "\n", args.out, "schema")
    return Exit.OK


PLAN = CommandSpec("plan", help_of("plan"), arguments, run)
