"""What each step of a whole-plan restore did in one run: the results the journal records.

Where it sits: the planner (dr.planner) decides each step; dr.restore.executing runs the ready
ones and makes one StepResult per step, written to the journal (dr.restore.journals) the moment
the step ends, printed by dr.restore.describing and compared by dr drill (dr.drills.verifying).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Callable

from dr.contract import Outcome


class ResultStatus(str, Enum):
    """What a step did in one run; the journal records the value, and a value read back from a
    journal compares equal to the member."""

    SUCCEEDED = "succeeded"
    FAILED = "failed"
    REFUSED = "refused"
    HELD = "held"
    SKIPPED = "skipped"

    def __str__(self) -> str:
        return self.value


@dataclass
class StepResult:
    """What one step did in one run; the journal keeps one record per result."""

    name: str
    status: ResultStatus
    reason: str
    outcomes: list[Outcome] = field(default_factory=list)
    seconds: float = 0.0
    forced: bool = False
    earlier: bool = False  # succeeded in an earlier run of this restore (resumed past)

    @property
    def succeeded(self) -> bool:
        return self.status == ResultStatus.SUCCEEDED

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for outcome in self.outcomes:
            out[outcome.status.value] = out.get(outcome.status.value, 0) + 1
        return out

    def to_json(self, seal: Callable[[Any], str] | None = None) -> dict[str, Any]:
        """With `seal` (a stored record: the journal, a drill record), the failed items, which
        may name secrets, are sealed, and the reason gives counts only."""
        failed = [o.to_json() for o in self.outcomes if o.failed]
        items: dict[str, Any] = {"failed_items": failed[:50]}
        reason = self.reason
        if seal is not None and failed:
            items = {"failed_items": [], "failed_items_sealed": seal(failed[:50])}
            reason = self._counted()  # a failure's reason may name the item, or quote its exception
        return {"step": self.name, "status": self.status, "reason": reason, "counts": self.counts(), **items,
                "failed_items_total": len(failed), "seconds": round(self.seconds, 3), "forced": self.forced,
                "earlier": self.earlier}

    def _counted(self) -> str:
        counts = ", ".join(f"{n} {status}" for status, n in sorted(self.counts().items()))
        return f"{counts}; the failed items' names and reasons are sealed (failed_items_sealed)"
