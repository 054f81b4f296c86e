"""Conformance of what an exporter declares under contract v2, and of what it answers the planner.

Where it sits: part of the exporter conformance suite (dr.testing.exporter_conformance). Each
function returns the problems it finds, in words naming the member and the value, so a plugin
author sees every mistake at once. The rules are docs/exporters.md, "What the core asks of
every exporter (v2)".
"""

from __future__ import annotations

import re
from typing import Any, Mapping

from dr.audit.findings import CODES
from dr.contract.capabilities import complete
from dr.contract import AnyOf, Destination, Exporter, FindingCode, NoDestination, RemapKind
from dr.model.artifacts import Artifact
from dr.planner.estimating import BYTE_PARTS
from dr.planner.steps import Step, matches

_NAME = re.compile(r"^[a-z0-9]([a-z0-9._-]{0,61}[a-z0-9])?$")  # what a plan accepts as a remap kind
_FLAG = re.compile(r"^[a-z][a-z0-9-]*$")
_CODE = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$")
# dr restore's own options: an exporter's option may not take one of these names
RESERVED_FLAGS = frozenset({"plan", "target", "snapshot", "source", "to", "failed", "force", "resume", "new",
                            "parallel", "dry-run", "overwrite", "identity", "lock-wait", "remap", "json",
                            "quiet", "help", "debug", "kubeconfig", "context"})


def _strings(value: Any) -> bool:
    return isinstance(value, frozenset) and all(isinstance(v, str) and v.strip() for v in value)


def _remap_kind_problems(kind: Any) -> list[str]:
    if not isinstance(kind, RemapKind):
        return [f"remap_kinds holds {kind!r}, not a RemapKind"]
    out = []
    if not _NAME.match(kind.name):
        out.append(f"remap kind {kind.name!r}: a plan could not name it (lower-case letters, digits, . _ -)")
    if not kind.rewrites or not _strings(kind.rewrites):
        out.append(f"remap kind {kind.name!r}: rewrites must be a non-empty frozenset of dependency kinds")
    if not kind.syntax.strip():
        out.append(f"remap kind {kind.name!r}: syntax must say what old and new look like")
    try:
        result = kind.rewrite("example.invalid/a", "example.invalid", "other.invalid")
    except Exception as exc:  # the planner calls it on every matching reference
        return out + [f"remap kind {kind.name!r}: rewrite raised {exc!r}"]
    if result is not None and not isinstance(result, str):
        out.append(f"remap kind {kind.name!r}: rewrite returned {result!r}, not a str or None")
    return out


def _selector_problem(selector: str) -> str:
    try:
        matches(selector, Step("probe", "probe", []))
    except ValueError as exc:
        return str(exc)
    return ""


def declaration_problems(cls: type[Exporter]) -> list[str]:
    """The class-level declarations: remap kinds, origin and checked kinds, ordering, restore options
    (of `cls` as the registry loads it: with the defaults of the capabilities it does not implement)."""
    cls = complete(cls)
    problems = [p for kind in cls.remap_kinds for p in _remap_kind_problems(kind)]
    names = [k.name for k in cls.remap_kinds if isinstance(k, RemapKind)]
    problems += [f"remap kind {n!r} is declared twice" for n in sorted(set(names)) if names.count(n) > 1]
    for name in ("origin_kinds", "checked_kinds"):
        kinds = getattr(cls, name)
        if not isinstance(kinds, frozenset) or not _strings(kinds):
            problems.append(f"{name} must be a frozenset of dependency kinds, not {kinds!r}")
    if not _strings(cls.ordering.roles):
        problems.append(f"ordering.roles must be a frozenset of role names, not {cls.ordering.roles!r}")
    for rule in cls.ordering.rules:
        problems += [f"ordering rule {rule.before} -> {rule.after}: {p}" for p in
                     (_selector_problem(rule.before), _selector_problem(rule.after)) if p]
        if not rule.why.strip():
            problems.append(f"ordering rule {rule.before} -> {rule.after} gives no reason (why)")
    flags = [o.flag for o in cls.restore_options]
    for option in cls.restore_options:
        if not _FLAG.match(option.flag) or option.flag in RESERVED_FLAGS:
            problems.append(f"restore option --{option.flag}: not a free flag name of dr restore")
        if not option.key or not option.help.strip() or not (option.switch or option.metavar.strip()):
            problems.append(f"restore option --{option.flag}: key, help and (unless a switch) metavar must be "
                            "given")
    problems += [f"restore option --{f} is declared twice" for f in sorted(set(flags)) if flags.count(f) > 1]
    return problems + _code_problems(cls)


def _code_problems(cls: type[Exporter]) -> list[str]:
    """finding_codes and lost_kind_codes: codes a report can print, each kind mapped to a code
    the exporter brings or dr has (dr.audit.declared refuses the rest at audit time)."""
    problems, own = [], set()
    for code in cls.finding_codes:
        if not isinstance(code, FindingCode) or not _CODE.match(code.code):
            problems.append(f"finding_codes holds {code!r}: a FindingCode whose code is lower-case words joined by -")
            continue
        own.add(code.code)
        if not code.title.strip() or not code.action.strip():
            problems.append(f"finding code {code.code!r}: title and action must say what happened and what to do")
        if code.code in CODES and CODES[code.code].owner in ("", None):
            problems.append(f"finding code {code.code!r} is dr's own: map kinds to it without declaring it")
    if not isinstance(cls.lost_kind_codes, Mapping):
        return problems + [f"lost_kind_codes must map dependency kinds to finding codes, not {cls.lost_kind_codes!r}"]
    for kind, code in cls.lost_kind_codes.items():
        if not isinstance(kind, str) or not isinstance(code, str) or (code not in own and code not in CODES):
            problems.append(f"lost_kind_codes maps {kind!r} to {code!r}: not one of its finding_codes nor a code "
                            "of dr's (docs/audit-json.md)")
    return problems


def planning_problems(exporter: Exporter, artifacts: list[Artifact]) -> list[str]:
    """What the planner asks about exported artifacts, answered in the contract's terms."""
    problems = _destination_problems(exporter, artifacts)
    for artifact in artifacts:  # the backup asks it of every artifact it writes
        held = exporter.plan_copy(artifact, "/nonexistent/plan.yaml")
        if held is not None and not (isinstance(held, tuple) and len(held) == 2
                                     and all(isinstance(h, str) for h in held)):
            problems.append(f"plan_copy returned {held!r} for {artifact.kind}/{artifact.identity}: None or "
                            "(what, object)")
    scratch = exporter.scratch_destination("/scratch/source")
    if scratch is not None and not isinstance(scratch, str):
        problems.append(f"scratch_destination returned {scratch!r}, not a str or None")
    for need in exporter.restore_needs(artifacts):
        if not isinstance(need, AnyOf) or not need.references or not need.what.strip():
            problems.append(f"restore_needs returned {need!r}: an AnyOf with a description and references")
    parts = exporter.restore_bytes(artifacts)
    bad = {k: v for k, v in parts.items() if k not in BYTE_PARTS or not isinstance(v, int) or v < 0}
    if bad:
        problems.append(f"restore_bytes gave {bad}: parts are {', '.join(BYTE_PARTS)}, sizes whole bytes")
    wait = exporter.restore_wait(artifacts)
    if wait is not None and not (isinstance(wait, tuple) and len(wait) == 2 and isinstance(wait[0], (int, float))
                                 and wait[0] >= 0 and isinstance(wait[1], str) and wait[1].strip()):
        problems.append(f"restore_wait returned {wait!r}: None or (seconds >= 0, why)")
    return problems


def _destination_problems(exporter: Exporter, artifacts: list[Artifact]) -> list[str]:
    try:
        found = exporter.destinations(artifacts, lambda kind, reference: None)
    except NoDestination as exc:
        return [] if "--to" in str(exc) else [f"NoDestination must say which --to to give: {exc}"]
    if not all(isinstance(d, Destination) and d.how.strip() for d in found):
        return [f"destinations returned {found!r}: Destinations, each saying how it was chosen"]
    given = sorted(id(a) for d in found for a in d.artifacts)
    if given != sorted(id(a) for a in artifacts):
        return ["destinations must hand every artifact to exactly one Destination"]
    return [f"Destination {d.label or d.how!r}: writes_to must be a tuple of references (str), not {d.writes_to!r}"
            for d in found if not (isinstance(d.writes_to, tuple) and all(isinstance(r, str) and r for r in d.writes_to))]
