"""Durations as people write them in plans: 90s, 15m, 1h30m, 7d, 2w."""

from __future__ import annotations

import re
from datetime import timedelta

_PART = re.compile(r"(\d+)([smhdw])")
_WHOLE = re.compile(r"^(?:\d+[smhdw])+$")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def parse_duration(text: str) -> timedelta:
    """Parse '1h30m' into a timedelta; ValueError names the expected form."""
    cleaned = str(text).strip().lower()
    if not _WHOLE.match(cleaned):
        raise ValueError("a duration such as 90s, 15m, 1h30m, 7d or 2w")
    seconds = sum(int(n) * _UNITS[u] for n, u in _PART.findall(cleaned))
    return timedelta(seconds=seconds)


def format_duration(delta: timedelta) -> str:
    seconds = int(delta.total_seconds())
    if seconds == 0:
        return "0s"
    parts = []
    for unit in ("w", "d", "h", "m", "s"):
        n, seconds = divmod(seconds, _UNITS[unit])
        if n:
            parts.append(f"{n}{unit}")
    return "".join(parts)
