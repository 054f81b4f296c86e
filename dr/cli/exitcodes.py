"""Exit codes scripts can rely on. The README's table is generated from this one (a test checks)."""

from enum import IntEnum


class Exit(IntEnum):
    OK = 0  # success: everything asked for was done
    FAILURE = 1  # the command failed (unreachable target, exporter error, nothing written)
    USAGE = 2  # bad arguments, or the plan is invalid (every problem is listed)
    PARTIAL = 3  # partial failure: some sources or items failed; each one is named
    BLOCKERS = 4  # the audit found blockers (recovery needs something from a failed domain); a restore refused steps
    LOCKED = 5  # the repository is locked: by a prune, or (for dr prune) by any other dr process
    INTEGRITY = 6  # stored data is damaged or missing (verify or restore refused it)
    RPO_BREACH = 7  # dr status: a source or training run is older than its RPO objective
    INTERRUPTED = 130  # interrupted (Ctrl-C / SIGINT); nothing half-written is visible
    TERMINATED = 143  # SIGTERM (a Job's deadline, a node drain): stopped as for Ctrl-C, its lock released


MEANINGS = {
    Exit.OK: "success",
    Exit.FAILURE: "failure: the command could not do its job",
    Exit.USAGE: "usage or plan error: every problem is printed with file, field and fix",
    Exit.PARTIAL: "partial failure: some sources or items failed; each is named with its reason",
    Exit.BLOCKERS: "the audit found blockers; dr restore: steps were refused (a dry run: any step would be)",
    Exit.LOCKED: "the repository is locked by another dr process: a prune, or for dr prune any other",
    Exit.INTEGRITY: "damaged or missing data in the repository",
    Exit.RPO_BREACH: "an RPO objective is breached (dr status)",
    Exit.INTERRUPTED: "interrupted; nothing half-written is visible",
    Exit.TERMINATED: "terminated by SIGTERM (a Job's deadline, a node drain): stopped as for Ctrl-C, its lock released",
}
