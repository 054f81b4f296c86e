"""Restoring: one source (running), or every source of a snapshot as one ordered, journaled plan.

running      one source from one snapshot (`dr restore --source`)
restoring    the whole plan: prepare (the planner's plan, dr.planner, with its RTO estimate),
             then run it with a journal
executing, journals, results, describing: the pieces that run a decided plan, record what each
step did, and print both, each named after what it holds or does
"""

from dr.restore.restoring import (Prepared, RestoreRun, RestoreUsageError, choose_restore_target, prepare,
                                  run_plan_restore)
from dr.restore.running import RestoreResult, run_restore

__all__ = ["Prepared", "RestoreResult", "RestoreRun", "RestoreUsageError", "choose_restore_target", "prepare",
           "run_plan_restore", "run_restore"]
