"""The CronJobs beside the backups: retention, reading the data back, RPO and the audit.

Backups alone never forget a snapshot, never find a damaged blob and never notice that they
stopped; these four commands do, each on its own schedule, from the plan alone. Each runs per
target (the plan's targets are separate repositories): one CronJob `dr-<command>` for a plan
with one target, `dr-<command>-<target>` with `--target` for each of several. The times are
chosen apart from each other and from the hour's backups; prune and verify wait for running
backups' locks (`--lock-wait`) rather than fail.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from dr.model.plans import Plan

LOCK_WAIT_SECONDS = 1800  # prune and verify wait this long for a running backup's lock
STATUS_LOCK_WAIT_SECONDS = 300  # status (every 15 min, deadline 600 s) waits this long for a prune
VERIFY_PARTS = 7  # a seventh of the blobs read each day: every blob read within a week


@dataclass(frozen=True)
class Task:
    command: str  # dr's subcommand
    schedule: str
    args: tuple[str, ...]
    answers: tuple[int, ...]  # exit codes that are the command's verdict: the Job fails at once, no retry
    deadline_seconds: int  # the Job's activeDeadlineSeconds
    reads_sources: bool  # it checks copies exporters keep outside the repository: the sources' needs too
    why: str


TASKS = (
    Task("prune", "30 3 * * *", ("--lock-wait", str(LOCK_WAIT_SECONDS)), (2, 6), 3 * 3600, False,
         "Retention: forget the snapshots the plan's retention no longer keeps and delete unreferenced blobs, "
         f"daily; it takes the exclusive lock, waiting up to {LOCK_WAIT_SECONDS} s for running backups."),
    Task("verify", "0 4 * * *", ("--read-data-subset", f"auto/{VERIFY_PARTS}", "--lock-wait", str(LOCK_WAIT_SECONDS)),
         (2, 6), 6 * 3600, True,
         f"Reads part (UTC days since 1970-01-01 mod {VERIFY_PARTS}) + 1 of {VERIFY_PARTS} of the blobs each day "
         "(a blob's part: its digest's first 8 hex digits mod 7, plus 1), so every blob is read within a week; "
         "exit 6 (damage) fails the Job at once."),
    Task("status", "*/15 * * * *", ("--lock-wait", str(STATUS_LOCK_WAIT_SECONDS)), (2, 7), 600, True,
         "RPO now, every 15 minutes: exit 7 (an objective breached) is the answer, not retried; it waits up to "
         f"{STATUS_LOCK_WAIT_SECONDS} s for a running prune (the exclusive lock)."),
    Task("audit", "15 5 * * *", (), (2, 4), 1800, False,
         "Blockers in each scenario the plan protects against, daily: exit 4 (blockers) is the answer, not retried."),
)


@dataclass(frozen=True)
class Scheduled:
    """One task on one target: a CronJob."""

    name: str
    task: Task
    target: str | None  # None: the plan's only target, not named on the command line


def scheduled(plan: Plan) -> list[Scheduled]:
    targets = [t.name for t in plan.spec.targets]
    if len(targets) == 1:
        return [Scheduled(f"dr-{task.command}", task, None) for task in TASKS]
    return [Scheduled(_name(task.command, target), task, target) for task in TASKS for target in targets]


def _name(command: str, target: str) -> str:
    return f"dr-{command}-{re.sub(r'[^a-z0-9-]', '-', target.lower())}"[:52].rstrip("-")


def command(plan_path: str, job: Scheduled) -> list[str]:
    argv = ["dr", job.task.command, "--plan", plan_path]
    if job.target:
        argv += ["--target", job.target]
    return argv + list(job.task.args) + ["--quiet"]
