"""What a source's options are, read from its exporter's options model: for `dr plugins`.

Where it sits: the registry (dr.contract.registry) lists each installed exporter with
option_docs(cls.Options). Every key a plan may write for the source is one OptionDoc: top-level
fields, and the fields of nested models as `name.sub` or, inside a list, `name[].sub`. The
description is the field's own (`Field(description=...)`, or its attribute docstring where the
model sets pydantic's `use_attribute_docstrings`), else the comment that documents it in the
model's source: a block of comment lines right above the field (`#:`, the Sphinx convention,
or `#`), or a `#` comment after it on its line. Reading the source is best effort: a model whose
source is not available has only the descriptions it declares.
"""

from __future__ import annotations

import dataclasses
import inspect
import io
import tokenize
import types
import typing
from typing import Any

from pydantic import BaseModel
from pydantic_core import PydanticUndefined, to_jsonable_python

NESTING = 4  # nested options models are listed this deep (options are shallow; a cycle ends here)


@dataclasses.dataclass(frozen=True)
class OptionDoc:
    """One key a plan may write in a source of this exporter."""

    name: str  # `paths`, `repositories[].url`, `auth.method`
    type: str  # the annotation, for people: `list[str]`, `int | None`, `'path' | 'none'`
    required: bool
    default: Any  # a JSON value (None when required)
    description: str

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "type": self.type, "required": self.required, "default": self.default,
                "description": self.description}


def option_docs(model: type[BaseModel], prefix: str = "", depth: int = 0) -> list[OptionDoc]:
    """Every option of `model`, nested ones after their parent."""
    comments = source_comments(model)
    out = []
    for name, field in model.model_fields.items():
        key = field.alias or name
        required = field.is_required()
        default = None if required else _json(field.get_default(call_default_factory=True))
        description = field.description or comments.get(name, "")
        out.append(OptionDoc(prefix + key, type_text(field.annotation), required, default, " ".join(description.split())))
        if depth < NESTING:
            out += _nested(field.annotation, f"{prefix}{key}{'[]' if 'list[' in str(field.annotation) else ''}.",
                           depth)
    return out


def _nested(annotation: Any, prefix: str, depth: int) -> list[OptionDoc]:
    """The options of the models inside a field's type; of a union of models (one per `method:`),
    each key once, as its first model has it, with every variant's type (`'token' | 'approle'`)."""
    seen: dict[str, OptionDoc] = {}
    for model in nested_models(annotation):
        for doc in option_docs(model, prefix, depth + 1):
            first = seen.setdefault(doc.name, doc)
            if doc.type not in first.type.split(" | "):
                seen[doc.name] = dataclasses.replace(first, type=f"{first.type} | {doc.type}")
    return list(seen.values())


def nested_models(annotation: Any) -> list[type[BaseModel]]:
    """The options models inside a field's type (X, list[X], X | None, X | Y, dict[str, X])."""
    if inspect.isclass(annotation) and issubclass(annotation, BaseModel):
        return [annotation]
    return [model for arg in typing.get_args(annotation) for model in nested_models(arg)]


def type_text(annotation: Any) -> str:
    """The annotation as a person reads it in a plan: `list[str]`, `int | None`, `'a' | 'b'`."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Literal:
        return " | ".join(repr(a) for a in args)
    if origin in (typing.Union, types.UnionType):
        return " | ".join(type_text(a) for a in args)
    if origin is typing.Annotated:
        return type_text(args[0])
    if origin is not None:
        name = getattr(origin, "__name__", str(origin))
        return f"{name}[{', '.join(type_text(a) for a in args)}]" if args else name
    if annotation is type(None):
        return "None"
    return getattr(annotation, "__name__", str(annotation).replace("typing.", ""))


def _json(value: Any) -> Any:
    if value is PydanticUndefined:
        return None
    try:
        return to_jsonable_python(value)
    except Exception:  # a default no JSON can hold: said in words, not dropped
        return repr(value)


def source_comments(model: type[BaseModel]) -> dict[str, str]:
    """field name -> the comment documenting it in the class body (see the module docstring)."""
    try:
        source = inspect.getsource(model)
    except (OSError, TypeError):
        return {}
    found: dict[str, str] = {}
    above: list[str] = []
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(inspect.cleandoc("\n" + source) + "\n").readline))
    except (tokenize.TokenError, SyntaxError):
        return {}
    lines: dict[int, list[tokenize.TokenInfo]] = {}
    for token in tokens:
        lines.setdefault(token.start[0], []).append(token)
    for number in sorted(lines):
        above = _comment_line(lines[number], above, found)
    return found


def _comment_line(tokens: list[tokenize.TokenInfo], above: list[str], found: dict[str, str]) -> list[str]:
    """One source line: collects comment lines, and gives them (or the line's own comment) to the
    field it declares (`name: type`, at the class body's indentation). Returns the open block; a
    blank line or any other statement closes it."""
    meaningful = [t for t in tokens if t.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.INDENT,
                                                      tokenize.DEDENT)]
    if not meaningful:
        return []
    first = meaningful[0]
    if first.type == tokenize.COMMENT:
        return [*above, first.string.lstrip("#:").strip()]
    is_field = (first.type == tokenize.NAME and first.start[1] == 4 and len(meaningful) > 1
                and meaningful[1].string == ":")
    if is_field:
        trailing = [t.string.lstrip("#").strip() for t in meaningful if t.type == tokenize.COMMENT]
        text = " ".join(above) or " ".join(trailing)
        if text:
            found.setdefault(first.string, text)
    return []
