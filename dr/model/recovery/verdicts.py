"""The four verdicts and how bad each one is.

A Verdict is a str: JSON, journals and reports write its value ("ok", "remapped", "blocker",
"unknown") exactly as they wrote the plain strings before, and a verdict read back from JSON
compares equal to the member.
"""

from __future__ import annotations

from enum import Enum
from typing import Iterable


class Verdict(str, Enum):
    OK = "ok"
    REMAPPED = "remapped"
    BLOCKED = "blocker"
    UNKNOWN = "unknown"

    def __str__(self) -> str:  # f-strings and str() give the value, as the plain strings did
        return self.value


OK, REMAPPED, BLOCKED, UNKNOWN = Verdict.OK, Verdict.REMAPPED, Verdict.BLOCKED, Verdict.UNKNOWN
VERDICTS = tuple(Verdict)  # the order reports print their counts in
# How bad a verdict is, for "the worst verdict of a step": a blocker outweighs everything, and
# an unknown outweighs a remap (nobody can tell whether it survives).
SEVERITY = {OK: 0, REMAPPED: 1, UNKNOWN: 2, BLOCKED: 3}


def worst(verdicts: Iterable[Verdict]) -> Verdict:
    """The most severe verdict (ok when there is none)."""
    return max(verdicts, key=SEVERITY.__getitem__, default=OK)
