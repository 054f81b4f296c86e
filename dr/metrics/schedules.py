"""How often a source is meant to run: the longest gap between two runs of its cron schedule.

"No success within twice the schedule" (deploy/prometheus-rules.yaml) compares against this, so
an irregular schedule ("0 9 * * 1-5") is judged by its longest gap (the weekend), not its
shortest, and does not alert every Saturday.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone


_HORIZON = timedelta(days=8)  # every cron pattern of weekdays repeats within a week
_MOST_RUNS = 20_000  # a per-minute schedule has 11,520 runs in 8 days


def longest_gap_seconds(schedule: str, start: datetime | None = None) -> float:
    start = start or datetime(2026, 1, 1, tzinfo=timezone.utc)  # fixed: the same answer every run
    from croniter import croniter  # imported by the runs that publish metrics only

    runs = croniter(schedule, start)
    previous = runs.get_next(datetime)
    longest = 0.0
    for _ in range(_MOST_RUNS):
        following = runs.get_next(datetime)
        longest = max(longest, (following - previous).total_seconds())
        if following - start > _HORIZON:
            break
        previous = following
    return longest
