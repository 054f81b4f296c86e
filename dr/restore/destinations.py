"""Where each step restores to, and what its exporter hears in RestoreRequest.remap.

Where it sits: the planner calls units_for() for every step. The destination of a source is,
in order: the operator's `--to SOURCE=DEST`; the plan's remap of where it came from (a Git
remote, a checkpoint bucket); where it came from. Exporters differ in what "where it came
from" means and in the remap keys they accept, so both are tables here:

  git          each repository goes back to its remote (the artifact's git-remote dependency)
               or to that remote's git-remote remap, as `to` (the git exporter takes no remap keys)
  files        the folder that held the configured paths (a single one), else --to is needed
  kubernetes   no default: a destination cluster must be named (--to SOURCE=[KUBECONFIG:]CONTEXT);
               RestoreRequest.remap gets `namespace:<old>`, `storage-class:<old>` and
               `image-registry:<old>` (from registry remaps), the keys its remapping accepts
  checkpoints  the source root rewritten by a bucket remap, else nothing: the DR copy is
               verified and the trainer loads it in place; no remap keys (it refuses unknown ones)
  any other    --to, or the exporter's own default; every applicable remap as `<kind>:<old>`
"""

from __future__ import annotations

import os
from typing import Any

from dr.model.artifacts import Artifact
from dr.model.plans import Plan
from dr.restore.remaps import rewrite
from dr.restore.steps import Step, Unit

# exporter type -> {plan remap kind: RestoreRequest.remap key prefix}
REQUEST_KEYS: dict[str, dict[str, str]] = {
    "kubernetes": {"namespace": "namespace:", "storage-class": "storage-class:", "registry": "image-registry:"},
    "git": {},
    "files": {},
    "checkpoints": {},
}
# Dependencies that record where an artifact came from: restoring writes there (or to its
# remap, or to --to) rather than reading from it, so they are judged as destinations.
ORIGIN_KINDS: dict[str, frozenset[str]] = {
    "git": frozenset({"git-remote"}),
    "checkpoints": frozenset({"bucket", "path"}),
}


def request_remap(plan: Plan, step: Step) -> dict[str, str]:
    keys = REQUEST_KEYS.get(step.exporter)
    out: dict[str, str] = {}
    for remap in plan.spec.restore.remaps:
        if remap.sources and step.name not in remap.sources:
            continue
        if keys is None:
            out[f"{remap.kind}:{remap.old}"] = remap.new
        elif remap.kind in keys:
            out[f"{keys[remap.kind]}{remap.old}"] = remap.new
    return out


def units_for(plan: Plan, step: Step, to: str | None) -> tuple[list[Unit], str]:
    """(units, problem): problem is why the step cannot run at all ('' when it can)."""
    remap = request_remap(plan, step)
    if to:
        return [Unit(step.name, step.artifacts, to, remap, "--to")], ""
    finder = _DEFAULTS.get(step.exporter)
    if finder is None:
        return [Unit(step.name, step.artifacts, None, remap, "the exporter's own default")], ""
    return finder(plan, step, remap)


def _git(plan: Plan, step: Step, remap: dict[str, str]) -> tuple[list[Unit], str]:
    groups: dict[str | None, tuple[list[Artifact], str]] = {}
    for artifact in step.artifacts:
        origin = next((d.reference for d in artifact.dependencies if d.kind == "git-remote"), None)
        found = rewrite(plan.spec.restore.remaps, step.name, step.exporter, "git-remote", origin) if origin else None
        dest, how = (found.new, found.describe()) if found else (origin, "its own remote (where it came from)")
        groups.setdefault(dest, ([], how))[0].append(artifact)
    units = [Unit(f"{step.name} -> {dest}", found, dest, remap, how) for dest, (found, how) in groups.items()]
    return units, ""


def _files(plan: Plan, step: Step, remap: dict[str, str]) -> tuple[list[Unit], str]:
    paths = _option(plan, step.name, "paths") or []
    parents = {os.path.dirname(os.path.normpath(os.path.join(plan.base_dir, str(p)))) for p in paths}
    if len(parents) != 1:
        return [], (f"its paths are in {len(parents)} folders: name the destination with "
                    f"--to {step.name}=DIR")
    parent = parents.pop()
    return [Unit(step.name, step.artifacts, parent, remap, "where it came from (the configured paths' folder)")], ""


def _kubernetes(plan: Plan, step: Step, remap: dict[str, str]) -> tuple[list[Unit], str]:
    return [], (f"no destination cluster: name one with --to {step.name}=CONTEXT or "
                f"--to {step.name}=KUBECONFIG:CONTEXT")


def _checkpoints(plan: Plan, step: Step, remap: dict[str, str]) -> tuple[list[Unit], str]:
    roots = [_url(r) for r in _option(plan, step.name, "roots") or []]
    if len(roots) == 1 and roots[0]:
        found = rewrite(plan.spec.restore.remaps, step.name, step.exporter, "bucket", roots[0])
        if found:
            return [Unit(step.name, step.artifacts, found.new, remap, found.describe())], ""
    return [Unit(step.name, step.artifacts, None, remap,
                 "none: each DR copy is verified where it is, and the trainer loads it in place")], ""


_DEFAULTS = {"git": _git, "files": _files, "kubernetes": _kubernetes, "checkpoints": _checkpoints}


def _option(plan: Plan, source: str, name: str) -> Any:
    """An exporter option, whether the plan was loaded with the plugins (a model) or without (a dict)."""
    options = plan.options.get(source)
    return options.get(name) if isinstance(options, dict) else getattr(options, name, None)


def _url(root: Any) -> str:
    if isinstance(root, str):
        return root
    return str(root.get("url", "")) if isinstance(root, dict) else str(getattr(root, "url", ""))


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


def scratch_destinations(scratch: str, exporters: dict[str, str]) -> dict[str, str]:
    """A drill's destinations under one scratch folder: a subfolder per source.

    `exporters` maps each source to its exporter type. Git repositories become bare
    repositories `<scratch>/<source>/<name>.git`; a kubernetes source gets none (a folder is
    not a cluster: name a scratch cluster with SOURCE=CONTEXT).
    """
    root = os.path.abspath(scratch)
    out = {}
    for name, exporter in exporters.items():
        if exporter == "git":
            out[name] = os.path.join(root, name, "{name}.git")
        elif exporter != "kubernetes":
            out[name] = os.path.join(root, name)
    return out
