"""Where each step restores to, and what its exporter hears in RestoreRequest.remap.

Where it sits: the planner calls units_for() for every step. The destination of a source is,
in order: the operator's `--to SOURCE=DEST`; else what the exporter's destinations() answers
(contract v2: where it came from, or its remap; NoDestination when it cannot choose, with the
--to to give). RestoreRequest.remap gets, for every plan remap that applies to the source,
what the exporter's request_remap() makes of it (a v1 exporter, through its adapter, hears
every one as `<kind>:<old>`). No exporter is named here.

Where a copy is (provides_at): an artifact that provides a reference and knows where its copy
lives records `meta['provides_at'] = {reference: where}` (the images exporter: a source image ->
its DR copy pinned by digest). In a whole-plan restore, a step whose artifacts depend on such a
reference hears it as a remap of that one reference to `where`, through the remap kind its own
exporter declares for the dependency's kind (request_remap(kind, reference, where)); a step
whose exporter declares none for that kind hears nothing. A plan remap that rewrites the
reference wins: it is what the operator asked for.
"""

from __future__ import annotations

import os

from dr.contract import Exporter, NoDestination
from dr.model.artifacts import Artifact
from dr.model.plans import Plan
from dr.planner.remaps import applies_to, rewrite, rewriter
from dr.planner.steps import Step, Unit


def provided_at(artifacts: list[Artifact]) -> dict[str, tuple[str, str]]:
    """reference -> (the providing source, where its copy is), from every meta['provides_at']."""
    found: dict[str, tuple[str, str]] = {}
    for artifact in artifacts:
        places = artifact.meta.get("provides_at")
        if isinstance(places, dict):
            for reference, where in places.items():
                if isinstance(reference, str) and isinstance(where, str) and where:
                    found.setdefault(reference, (artifact.source, where))
    return found


def provided_remap(plan: Plan, step: Step, provided: dict[str, tuple[str, str]]) -> dict[str, str]:
    """What the step hears of the copies other steps provide (see the module docstring)."""
    out: dict[str, str] = {}
    if step.instance is None or not provided:
        return out
    remaps = plan.spec.restore.remaps
    for kind, reference in sorted({(d.kind, d.reference) for a in step.artifacts for d in a.dependencies}):
        source, where = provided.get(reference, (step.name, ""))
        declared = next((k for k in step.instance.remap_kinds if kind in k.rewrites), None)
        if source == step.name or declared is None or rewrite(remaps, step.name, step.instance, kind, reference):
            continue
        out.update(step.instance.request_remap(declared.name, reference, where))
    return out


def request_remap(plan: Plan, step: Step, provided: dict[str, tuple[str, str]] | None = None) -> dict[str, str]:
    out: dict[str, str] = provided_remap(plan, step, provided or {})
    if step.instance is None:
        return out
    for remap in plan.spec.restore.remaps:
        if applies_to(remap, step.name):
            out.update(step.instance.request_remap(remap.kind, remap.old, remap.new))
    return out


def units_for(plan: Plan, step: Step, to: str | None,
              provided: dict[str, tuple[str, str]] | None = None) -> tuple[list[Unit], str]:
    """(units, problem): problem is why the step cannot run at all ('' when it can).
    `provided`: provided_at() of the snapshot's artifacts (a whole-plan restore)."""
    remap = request_remap(plan, step, provided)
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
    return [Unit(f"{step.name} {d.label}".strip(), d.artifacts, d.to, remap, d.how, d.writes_origin,
                 tuple(d.writes_to) if d.to is None else ()) for d in found], ""


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
