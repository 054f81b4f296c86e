"""The time dr stamps on what it writes: snapshot times and Object Lock retain-until dates.

One function, so tests can simulate days of backups (a week of hourly or daily runs in
seconds) by replacing it; prune's retention policy reads snapshot times, so it follows.
Nothing else in dr may read the wall clock for those two purposes.
"""

from __future__ import annotations

from datetime import datetime, timezone


def now() -> datetime:
    """The current UTC time (timezone-aware)."""
    return datetime.now(timezone.utc)
