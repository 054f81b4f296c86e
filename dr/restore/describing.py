"""The restore plan, its RTO estimate and a run's results as text a person reads during an incident.

Where it sits: `dr restore` prints these lines (--json prints the plan's to_json() instead);
`dr drill` prints the same plan. Needs that are ok are counted, not listed: what needs a
decision (blockers, unknowns, remaps) is what the page is for.
"""

from __future__ import annotations

from datetime import datetime, timezone

from dr.model.recovery import OK
from dr.model.redaction import redact
from dr.model.sizes import human_size
from dr.planner.estimating import RtoEstimate, show
from dr.planner.planning import RestorePlan
from dr.planner.steps import REFUSED, Step
from dr.restore.results import ResultStatus, StepResult

SHOWN_NEEDS = 8  # per step; the JSON has them all


def age(moment: datetime, now: datetime | None = None) -> str:
    return show(((now or datetime.now(timezone.utc)) - moment).total_seconds())


def plan_lines(rp: RestorePlan) -> list[str]:
    snap = rp.snapshot
    lines = [f"Restore plan for {rp.plan}: snapshot {snap.short_id} ({snap.time:%Y-%m-%d %H:%M:%S}Z, "
             f"{age(snap.time)} old) from target {rp.target}",
             f"Scenario: {rp.label}" + ("; --force: blocked steps run anyway" if rp.force else "")]
    for need in rp.preconditions:
        lines.append(f"  precondition {need.verdict}: {need.kind} {need.reference}: {need.reason}")
    levels = rp.levels()
    for number, level in enumerate(levels, start=1):
        together = " (steps run in parallel)" if len(level) > 1 else ""
        lines.append(f"Level {number} of {len(levels)}{together}")
        for step in level:
            lines += step_lines(step, len(rp.steps))
    return [redact(line) for line in lines]


def step_lines(step: Step, total: int) -> list[str]:
    reason = step.reason
    if step.status == REFUSED and not step.problem:
        reason = f"{len(step.blockers())} blocker(s), below; --force runs it anyway"
    elif step.forced:
        reason = f"forced past {len(step.blockers())} blocker(s), below"
    head = (f"  {step.seq}/{total} {step.name} ({step.exporter}, {len(step.artifacts)} artifacts, "
            f"{human_size(step.bytes)}): {step.status.upper()} [{step.verdict}] - {reason}")
    lines = [head]
    for before, why in sorted(step.after.items()):
        lines.append(f"       after {before}: {why}")
    for unit in step.units:
        lines.append(f"       to {unit.to or '(in place)'} - {unit.how}"
                     + (f"; remap {unit.remap}" if unit.remap else ""))
    decisive = [n for n in step.needs if n.verdict != OK]
    for need in decisive[:SHOWN_NEEDS]:
        lines.append(f"       {need.verdict:<8} {need.kind} {need.reference}: {need.reason}")
    if len(decisive) > SHOWN_NEEDS:
        lines.append(f"       ... and {len(decisive) - SHOWN_NEEDS} more (see --json)")
    fine = len(step.needs) - len(decisive)
    if fine:
        lines.append(f"       ok       {fine} {'need is' if fine == 1 else 'needs are'} met (they survive "
                     "or come back with the snapshot; see --json)")
    return lines


def estimate_lines(estimate: RtoEstimate) -> list[str]:
    lines = [f"RTO estimate: {estimate.describe_total()} (throughput: {estimate.throughput_basis})"]
    width = max((len(part.label) for part in estimate.parts), default=0)  # the column fits the longest
    for part in estimate.parts:
        shown = "unknown" if part.seconds is None else show(part.seconds)
        lines.append(f"  {part.label:<{width}} {shown:>9}  {part.basis}")
    lines += [redact(f"  finding: {finding}") for finding in estimate.findings]
    return lines


def progress_line(kind: str, step: Step, result: StepResult | None, total: int) -> str:
    where = ", ".join(u.to or "(in place)" for u in step.units) or "-"
    if kind == "start":
        return redact(f"[{step.seq}/{total}] {step.name}: restoring {len(step.artifacts)} artifacts to {where}")
    assert result is not None
    took = "" if result.earlier or result.status in (ResultStatus.REFUSED, ResultStatus.HELD) else f" in {show(result.seconds)}"
    return redact(f"[{step.seq}/{total}] {step.name}: {result.status}{took}: {result.reason}")


def result_lines(restore_id: str, resumed: bool, results: list[StepResult]) -> list[str]:
    counts: dict[str, int] = {}
    for result in results:
        counts[result.status] = counts.get(result.status, 0) + 1
    summary = ", ".join(f"{n} {status}" for status, n in sorted(counts.items()))
    verb = "resumed" if resumed else "restore"
    lines = [f"{verb} {restore_id}: {summary}"]
    for result in results:
        if not result.succeeded:
            lines.append(f"  {result.name}: {result.status}: {result.reason}")
    unfinished = [r.name for r in results if not r.succeeded]
    if unfinished:
        lines.append(f"  not finished; run the same command again (or --resume {restore_id}) to retry "
                     f"{', '.join(unfinished)}; steps that succeeded are not redone")
    return [redact(line) for line in lines]

