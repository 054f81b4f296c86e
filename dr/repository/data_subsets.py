"""Which part of the blobs `dr verify --read-data-subset N/T` reads (restic's `check --read-data-subset`).

The blobs are split into T parts by digest: a blob is in part (its digest's first 8 hex digits, as
a number, mod T) + 1. The partition depends on the digest alone, so the same blob is in the same
part on every machine and every day, and the T parts together hold every blob exactly once:
reading parts 1..T on T days reads the whole repository. `auto/T` picks the part from the UTC
date (days since 1970-01-01, mod T, + 1), so a daily job reads every blob within T days without
keeping any state of its own.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date

_SUBSET = re.compile(r"^(?P<part>auto|\d+)/(?P<parts>\d+)$")
_EPOCH = date(1970, 1, 1)


class SubsetError(ValueError):
    """A --read-data-subset that is not N/T (1 <= N <= T) or auto/T."""


@dataclass(frozen=True)
class DataSubset:
    part: int  # 1..parts
    parts: int

    def holds(self, digest: str) -> bool:
        return int(digest.rsplit(":", 1)[-1][:8], 16) % self.parts + 1 == self.part

    def __str__(self) -> str:
        return f"{self.part}/{self.parts}"


def parse(text: str, today: date) -> DataSubset:
    """N/T, or auto/T for today's part (`today`: the UTC date)."""
    match = _SUBSET.match(text.strip())
    if not match or not 1 <= int(match["parts"]) <= 10_000:
        raise SubsetError(f"--read-data-subset {text!r}: give N/T (part N of T, 1 <= N <= T) or auto/T "
                          "(today's part, from the UTC date), e.g. 3/7 or auto/7")
    parts = int(match["parts"])
    part = (today - _EPOCH).days % parts + 1 if match["part"] == "auto" else int(match["part"])
    if not 1 <= part <= parts:
        raise SubsetError(f"--read-data-subset {text!r}: in N/T the part N must be between 1 and {parts}")
    return DataSubset(part, parts)
