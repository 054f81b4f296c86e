"""Where each step restores to, and what its exporter hears in RestoreRequest.remap.

Where it sits: the planner calls units_for() for every step. The destination of a source is,
in order: the operator's `--to SOURCE=DEST`; else what the exporter's destinations() answers
(contract v2: where it came from, or its remap; NoDestination when it cannot choose, with the
--to to give). RestoreRequest.remap gets, for every plan remap that applies to the source,
what the exporter's request_remap() makes of it (a v1 exporter, through its adapter, hears
every one as `<kind>:<old>`). No exporter is named here.
"""

from __future__ import annotations

import os

from dr.exporters.contract import Exporter, NoDestination
from dr.model.plans import Plan
from dr.restore.remaps import applies_to, rewriter
from dr.restore.steps import Step, Unit


def request_remap(plan: Plan, step: Step) -> dict[str, str]:
    out: dict[str, str] = {}
    if step.instance is None:
        return out
    for remap in plan.spec.restore.remaps:
        if applies_to(remap, step.name):
            out.update(step.instance.request_remap(remap.kind, remap.old, remap.new))
    return out


def units_for(plan: Plan, step: Step, to: str | None) -> tuple[list[Unit], str]:
    """(units, problem): problem is why the step cannot run at all ('' when it can)."""
    remap = request_remap(plan, step)
    if to:
        return [Unit(step.name, step.artifacts, to, remap, "--to")], ""
    if step.instance is None:
        return [], f"no installed exporter of type '{step.exporter}' (dr plugins lists them)"
    try:
        found = step.instance.destinations(step.artifacts, rewriter(plan.spec.restore.remaps, step.name,
                                                                    step.instance))
    except NoDestination as exc:
        return [], str(exc)
    except Exception as exc:  # a plugin's bug must not take the whole plan down: this step is refused
        return [], (f"the {step.exporter} exporter failed to choose a destination ({type(exc).__name__}: "
                    f"{exc}): give --to {step.name}=DEST")
    return [Unit(f"{step.name} {d.label}".strip(), d.artifacts, d.to, remap, d.how) for d in found], ""


def parse_destinations(values: list[str], sources: list[str]) -> tuple[dict[str, str], list[str]]:
    """`--to SOURCE=DEST` values -> {source: dest}, and what was wrong with the rest."""
    found: dict[str, str] = {}
    problems = []
    for value in values:
        name, sep, dest = value.partition("=")
        if not sep or name not in sources or not dest:
            problems.append(f"--to {value!r}: expected SOURCE=DEST with SOURCE one of {', '.join(sources)}")
        elif name in found:
            problems.append(f"--to names source '{name}' twice")
        else:
            found[name] = dest
    return found, problems


def scratch_destinations(scratch: str, exporters: dict[str, Exporter]) -> dict[str, str]:
    """A drill's destinations under one scratch folder: each exporter's scratch_destination() of
    a subfolder per source (None: a folder cannot hold it, e.g. a cluster)."""
    root = os.path.abspath(scratch)
    out = {}
    for name, exporter in exporters.items():
        dest = exporter.scratch_destination(os.path.join(root, name))
        if dest is not None:
            out[name] = dest
    return out
