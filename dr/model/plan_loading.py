"""Loading a plan file and reporting every problem in it at once.

Each problem names the file, the field path (with its line), what was found and what was
expected. An unknown key names the nearest valid key. No problem is ever a traceback.
"""

from __future__ import annotations

import difflib
import os
from dataclasses import dataclass
from typing import Any, Iterable, Protocol

import yaml
from pydantic import BaseModel, ValidationError

from dr.model import plan_rules
from dr.model.plans import RENAMED_KEYS, SOURCE_COMMON_KEYS, Plan, PlanSpec
from dr.model.redaction import redact



class OptionsLookup(Protocol):
    """What plan loading needs from the exporter registry (the model cannot import it)."""

    def names(self) -> list[str]: ...

    def options_model(self, type_name: str) -> "type[BaseModel] | None": ...

    def remap_kinds(self, names: "Iterable[str] | None" = None) -> dict[str, list[str]]:
        """Every remap kind an installed exporter (of `names`, if given) applies -> the
        exporters that apply it."""
        ...


@dataclass(frozen=True)
class Problem:
    file: str
    path: str
    found: str
    expected: str
    line: int | None = None

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        field = self.path or "(top level)"
        return f"{where}: {field}: found {self.found}; expected {self.expected}"


class PlanError(Exception):
    """The plan is not valid. `problems` lists every problem found."""

    def __init__(self, problems: list[Problem]):
        self.problems = problems
        super().__init__("\n".join(str(p) for p in problems))


def load_plan(path: str, options_lookup: OptionsLookup | None = None) -> Plan:
    """Read, validate and resolve a plan file; raise PlanError listing every problem."""
    text, problems = _read(path)
    if problems:
        raise PlanError(problems)
    return parse_plan(text, path, options_lookup)


def parse_plan(text: str, path: str, options_lookup: OptionsLookup | None = None) -> Plan:
    node, data = _parse_yaml(text, path)
    lines = _line_map(node)
    if not isinstance(data, dict):
        raise PlanError([Problem(path, "", _show(data), "a YAML mapping of plan fields")])
    spec, problems = _validate_structure(data, path, lines)
    checkable = spec if spec is not None else _lenient_spec(data, problems)
    raw_sources = [s for s in data.get("sources") or [] if isinstance(s, dict)] \
        if isinstance(data.get("sources"), list) else []
    options, option_problems = _validate_options(raw_sources, path, lines, options_lookup)
    problems += option_problems
    if checkable is not None and options_lookup is not None:
        problems += _remap_kind_problems(checkable, path, lines, options_lookup)
    if checkable is not None:
        problems += [Problem(path, p, found, expected, _line(lines, p))
                     for p, found, expected in plan_rules.check(checkable)]
    if problems or spec is None:
        raise PlanError(problems)
    return Plan(spec, path, os.path.dirname(os.path.abspath(path)), options)


class _DuplicateKey(Exception):
    def __init__(self, key: str, first: int, again: int):
        super().__init__(key)
        self.key, self.first, self.again = key, first, again


class _UniqueKeyLoader(yaml.SafeLoader):
    """SafeLoader that refuses duplicate keys: a second `sources:` must not hide the first."""

    def construct_mapping(self, node, deep=False):
        seen: dict = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if isinstance(key, (str, int, float, bool)) and key in seen:
                raise _DuplicateKey(str(key), seen[key], key_node.start_mark.line + 1)
            seen[key] = key_node.start_mark.line + 1
        return super().construct_mapping(node, deep=deep)


# A plan is a few hundred nodes; aliases can make a few hundred bytes stand for billions (an
# "alias bomb"), and everything that walks the plan (the line map, validation) walks them all.
NODE_BUDGET = 100_000


class _TooManyNodes(Exception):
    pass


def _expanded_size(node: Any, sizes: dict[int, int], open_nodes: set[int]) -> int:
    """How many nodes the tree has once every alias is expanded; stops at NODE_BUDGET.

    Each distinct node is counted once (memoized), so the work is bounded by the text's size.
    """
    if id(node) in sizes:
        return sizes[id(node)]
    if id(node) in open_nodes:
        raise _TooManyNodes("an alias that contains itself (endless once expanded)")
    open_nodes.add(id(node))
    total = 1
    children = node.value if isinstance(node, (yaml.SequenceNode, yaml.MappingNode)) else ()
    for child in children:
        for part in (child if isinstance(node, yaml.MappingNode) else (child,)):
            total += _expanded_size(part, sizes, open_nodes)
            if total > NODE_BUDGET:
                raise _TooManyNodes(f"aliases that expand to more than {NODE_BUDGET:,} nodes")
    open_nodes.discard(id(node))
    sizes[id(node)] = total
    return total


def _parse_yaml(text: str, path: str):
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        _expanded_size(node, {}, set())  # before anything walks the tree or builds the data
        return node, yaml.load(text, Loader=_UniqueKeyLoader)
    except _TooManyNodes as exc:
        raise PlanError([Problem(path, "", f"YAML with {exc}",
                                 "a plan without alias bombs: use fewer or smaller anchors")]) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark else None
        raise PlanError([Problem(path, "", f"invalid YAML ({getattr(exc, 'problem', exc)})",
                                 "a YAML mapping", line)]) from None
    except _DuplicateKey as dup:
        raise PlanError([Problem(path, dup.key, f"the key '{dup.key}' again (first on line {dup.first})",
                                 "each key once: YAML would silently keep only the last one",
                                 dup.again)]) from None
    except (ValueError, RecursionError) as exc:  # absurd numbers, absurd nesting
        raise PlanError([Problem(path, "", f"unparseable YAML ({exc.__class__.__name__})",
                                 "a plain YAML mapping")]) from None


def _read(path: str) -> tuple[str, list[Problem]]:
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read(), []
    except FileNotFoundError:
        return "", [Problem(path, "", "no such file", "a path to a plan YAML file")]
    except (OSError, UnicodeDecodeError) as exc:
        return "", [Problem(path, "", f"an unreadable file ({exc.__class__.__name__})",
                            "a readable UTF-8 YAML file")]


def _validate_structure(data: dict, path: str, lines: dict[str, int]):
    try:
        return PlanSpec.model_validate(data), []
    except ValidationError as exc:
        return None, _problems_from(exc, data, path, lines, prefix=())


def _lenient_spec(data: dict, problems: list[Problem]) -> PlanSpec | None:
    """The plan without its broken optional fields, so cross-field rules can still be checked.

    Returns None when a required field is broken: rules over a half plan would mislead.
    """
    broken = {p.path.split(".")[0].split("[")[0] for p in problems}
    required = {name for name, f in PlanSpec.model_fields.items() if f.is_required()}
    if broken & required or "" in broken:
        return None
    try:
        return PlanSpec.model_validate({k: v for k, v in data.items() if k not in broken})
    except ValidationError:
        return None


def _validate_options(raw_sources: list[dict], path: str, lines: dict[str, int],
                      options_lookup: OptionsLookup | None):
    """Each source's plugin options, validated by the plugin's own model."""
    options: dict[str, Any] = {}
    problems: list[Problem] = []
    for i, source in enumerate(raw_sources):
        name, type_name = source.get("name"), source.get("type")
        raw = {k: v for k, v in source.items() if k not in SOURCE_COMMON_KEYS}
        if options_lookup is None or not isinstance(type_name, str):
            options[str(name)] = raw
            continue
        model, trouble = _options_model(options_lookup, type_name)
        if model is None:
            field = f"sources[{i}].type"
            problems.append(Problem(path, field, trouble[0], trouble[1], _line(lines, field)))
            continue
        try:
            options[str(name)] = model.model_validate(raw)
        except ValidationError as exc:
            problems += _problems_from(exc, raw, path, lines, prefix=("sources", i),
                                       extra_keys=SOURCE_COMMON_KEYS, root=model)
    return options, problems


def _remap_kind_problems(spec: PlanSpec, path: str, lines: dict[str, int],
                         lookup: OptionsLookup) -> list[Problem]:
    """A remap kind must be one that an exporter of a source it applies to declares."""
    if not spec.restore.remaps:
        return []  # and no exporter is imported: a plan only loads the exporters it uses
    types = {s.name: s.type for s in spec.sources}
    declared = getattr(lookup, "remap_kinds", lambda names: {})(sorted(set(types.values())))
    problems = []
    for i, remap in enumerate(spec.restore.remaps):
        scoped = [types[n] for n in remap.sources if n in types] or list(types.values())
        if any(t in declared.get(remap.kind, ()) for t in scoped):
            continue
        usable = sorted(k for k, by in declared.items() if any(t in by for t in scoped))
        field = f"restore.remaps[{i}].kind"
        known = ", ".join(f"{k} ({', '.join(declared[k])})" for k in usable) or "none"
        problems.append(Problem(path, field, f"'{remap.kind}', which no exporter of "
                                f"{'its sources' if remap.sources else 'the plan'} applies",
                                f"a remap kind one of them declares: {known} (docs/restore.md)",
                                _line(lines, field)))
    return problems


def _options_model(lookup: OptionsLookup, type_name: str):
    """(model, None) or (None, (found, expected)) for an unknown or broken plugin."""
    try:
        model = lookup.options_model(type_name)
    except Exception as exc:  # a plugin that fails to import is a problem to report, not a crash
        return None, (f"exporter '{type_name}' which failed to load ({exc})",
                      "an exporter that loads: run 'dr plugins' to see the error")
    if model is not None:
        return model, None
    known = lookup.names()
    nearest = difflib.get_close_matches(type_name, known, n=1, cutoff=0.5)
    hint = f"did you mean '{nearest[0]}'? " if nearest else ""
    return None, (f"unknown exporter type '{type_name}'",
                  f"{hint}an installed exporter: {', '.join(known)} (see 'dr plugins')")


def _problems_from(exc: ValidationError, data: Any, path: str, lines: dict[str, int],
                   prefix: tuple, extra_keys: Iterable[str] = (), root: Any = None) -> list[Problem]:
    problems = []
    for error in exc.errors(include_url=False):
        loc = prefix + tuple(error["loc"])
        field = _dotted(loc)
        if error["type"] == "extra_forbidden":
            problems.append(_unknown_key(error, path, lines, prefix, extra_keys, root))
            continue
        found = "nothing (the field is missing)" if error["type"] == "missing" else _show(error.get("input"))
        problems.append(Problem(path, field, found, _expected(error), _line(lines, field)))
    return problems


def _unknown_key(error, path, lines, prefix, extra_keys, root) -> Problem:
    loc = tuple(error["loc"])
    key = str(loc[-1])
    valid = sorted(set(_valid_keys(loc[:-1], root)) | set(extra_keys if len(loc) == 1 else ()))
    nearest = difflib.get_close_matches(key, valid, n=1, cutoff=0.5)
    hint = f"did you mean '{nearest[0]}'? " if nearest else ""
    field = _dotted(prefix + loc)
    if key in RENAMED_KEYS and (prefix + loc)[:1] == ("targets",):
        return Problem(path, field, f"the key '{key}', which was replaced", RENAMED_KEYS[key],
                       _line(lines, field))
    return Problem(path, field, f"unknown key '{key}'",
                   f"{hint}valid keys here: {', '.join(valid)}", _line(lines, field))


def _valid_keys(loc: tuple, root: Any = None) -> list[str]:
    """The keys the schema allows at a location, found by walking the pydantic models."""
    model: Any = root if root is not None else PlanSpec
    for part in loc:
        if isinstance(part, int) or model is None:
            continue
        field = model.model_fields.get(str(part))
        model = _model_of(field.annotation) if field else None
    return list(model.model_fields) if model is not None else []


def _model_of(annotation: Any):
    for candidate in getattr(annotation, "__args__", ()) + (annotation,):
        if isinstance(candidate, type) and issubclass(candidate, BaseModel):
            return candidate
        inner = _model_of(candidate) if getattr(candidate, "__args__", None) else None
        if inner is not None:
            return inner
    return None


def _expected(error: dict) -> str:
    message = str(error.get("msg", "a valid value"))
    for lead in ("Value error, ", "Assertion failed, "):
        message = message.removeprefix(lead)
    if error["type"] == "string_pattern_mismatch":
        from dr.model.plans import NAME_HINT
        return NAME_HINT
    return message[0].lower() + message[1:] if message else "a valid value"


def _show(value: Any) -> str:
    text = redact(repr(value)) if not isinstance(value, (dict, list)) else type(value).__name__
    return text if len(text) <= 80 else text[:77] + "..."


def _dotted(loc: tuple) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _line(lines: dict[str, int], field: str) -> int | None:
    while field:
        if field in lines:
            return lines[field]
        field = field.rsplit(".", 1)[0] if "." in field else (field.rsplit("[", 1)[0] if "[" in field else "")
    return None


def _line_map(node: Any, prefix: str = "") -> dict[str, int]:
    """Field path -> 1-based line, from the YAML node tree."""
    lines: dict[str, int] = {}
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            path = f"{prefix}.{key.value}" if prefix else str(key.value)
            lines[path] = key.start_mark.line + 1
            lines.update(_line_map(value, path))
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            path = f"{prefix}[{i}]"
            lines[path] = item.start_mark.line + 1
            lines.update(_line_map(item, path))
    return lines
