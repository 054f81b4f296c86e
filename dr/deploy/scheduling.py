"""One CronJob per distinct schedule: sources that share a schedule run together."""

from __future__ import annotations

import re
from dataclasses import dataclass

from dr.model.plans import Plan

MAX_NAME = 52  # a CronJob's name leaves room for the Job and Pod suffixes
# A backup waits this long for a prune's exclusive lock rather than fail (dr-prune runs daily)
BACKUP_LOCK_WAIT_SECONDS = 600


@dataclass(frozen=True)
class Group:
    name: str  # the CronJob's name
    schedule: str
    sources: tuple[str, ...]
    every_source: bool  # the group is the whole plan: the command names no --source


def groups(plan: Plan, prefix: str = "dr-backup") -> tuple[list[Group], list[str]]:
    """(the groups, sorted by their first source; the sources with no schedule, left out)."""
    by_schedule: dict[str, list[str]] = {}
    for source in plan.spec.sources:
        if source.schedule:
            by_schedule.setdefault(source.schedule, []).append(source.name)
    left_out = sorted(s.name for s in plan.spec.sources if not s.schedule)
    everything = len(by_schedule) == 1 and not left_out
    result = []
    for schedule, names in sorted(by_schedule.items(), key=lambda item: sorted(item[1])[0]):
        names = sorted(names)
        name = prefix if everything else _name(prefix, names[0])
        result.append(Group(name, schedule, tuple(names), everything))
    return result, left_out


def _name(prefix: str, source: str) -> str:
    name = f"{prefix}-{re.sub(r'[^a-z0-9-]', '-', source)}"[:MAX_NAME]
    return name.rstrip("-")


def command(plan_path: str, group: Group) -> list[str]:
    argv = ["dr", "backup", "--plan", plan_path]
    if not group.every_source:
        for source in group.sources:
            argv += ["--source", source]
    return argv + ["--lock-wait", str(BACKUP_LOCK_WAIT_SECONDS), "--quiet"]
