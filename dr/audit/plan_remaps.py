"""The plan's remaps (restore.remaps), as the audit applies them: the restore's own rewrite.

A dependency in a lost domain is not a blocker when the restore of every source that needs it
rewrites it to a place that survives: an image mirrored to a surviving registry and remapped,
a Git remote remapped to its mirror. The rewrite is the planner's (dr.planner.remaps: a remap
counts only where the source's exporter declares its kind, for the dependency's kind, and the
remap's `sources` include the source), so `dr audit` and `dr restore --dry-run` give one answer
for the same dependency (issue 25, item 4). A source whose restore applies no remap to it still
needs the original, and the verdict stays.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from dr.audit.gathering import DependencyUse
from dr.contract import Exporter
from dr.model.plans import Plan
from dr.model.recovery import BLOCKED, OK, REMAPPED, UNKNOWN, RecoveryJudge, Verdict
from dr.planner.remaps import rewrite


@dataclass(frozen=True)
class Remapped:
    """The verdict of a dependency after the plan's remaps, and why (for the finding)."""

    verdict: Verdict
    why: str


class PlanRemaps:
    """The rewrites each source's restore applies, judged in one scenario."""

    def __init__(self, plan: Plan, exporters: Mapping[str, Exporter]):
        self.plan, self.exporters = plan, exporters

    def judge(self, judge: RecoveryJudge, use: DependencyUse) -> Remapped | None:
        """None when some source needing it applies no remap to it (or nothing needs it)."""
        if not use.sources or not self.plan.spec.restore.remaps:
            return None
        found = [rewrite(self.plan.spec.restore.remaps, s, self.exporters.get(s), use.kind, use.reference)
                 for s in sorted(use.sources)]
        if any(f is None for f in found):
            return None
        judged = [(f, judge.judge(f.new)) for f in found]
        for verdict in (BLOCKED, UNKNOWN):
            worse = next(((f, j) for f, j in judged if j.verdict == verdict), None)
            if worse is not None:
                f, j = worse
                if verdict == UNKNOWN:
                    return Remapped(UNKNOWN, f"{f.describe()}, but nothing in the plan places {f.new}, so nobody "
                                             "can tell whether it survives")
                return Remapped(BLOCKED, f"{f.describe()}, but the new place is in "
                                         f"{self.plan.domains.path(j.placement.domain)} too, which is lost as well")
        f, j = judged[0]
        where = (f"in {self.plan.domains.path(j.placement.domain)}, which survives"
                 if j.verdict == OK and j.placement.domain is not None else "restored by the snapshot")
        return Remapped(REMAPPED, f"{f.describe()}; the new place is {where}")
