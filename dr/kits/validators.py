"""Checks that several exporters' options share: a name that becomes a path, names listed once.

Each raises ValueError with the value and the fix, which pydantic turns into the plan error
that names the file and the field (dr plan validate, every command).
"""

from __future__ import annotations

import re
from typing import Hashable, Iterable

_PLAIN = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._-]*$")


def plain_name(value: str, becomes: str = "a path") -> str:
    """A name that becomes a file or folder name: letters, digits, '.', '_' and '-', not . or .."""
    if not _PLAIN.match(value) or value in (".", ".."):
        raise ValueError(f"{value!r}: use letters, digits, '.', '_' and '-' (it becomes {becomes})")
    return value


def listed_once(keys: Iterable[Hashable], what: str, shown=str) -> None:
    """Refuses keys that repeat: `what` names them ("repository names must be unique")."""
    keys = list(keys)
    repeated = sorted({shown(k) for k in keys if keys.count(k) > 1})
    if repeated:
        raise ValueError(f"{what}: {', '.join(repeated)}")
