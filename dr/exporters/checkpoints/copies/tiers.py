"""Retention tiers: which complete checkpoints each DR target receives, and which copies it drops.

Why counted from what a tier already holds: a trainer usually deletes its own old checkpoints
(keep the last K), so "every 10th checkpoint since the run began" cannot be recomputed from
the source. The newest copy a tier holds is the anchor instead: a thinned tier takes the next
checkpoint once `every_nth` complete checkpoints, or `min_interval` of checkpoint time, have
passed since it. A tier holding nothing of a run starts with the run's newest checkpoint, so a
new tier protects the present at once rather than the oldest history.

Milestones (the plan's `milestone` rule: a step multiple, or a marker file in the checkpoint)
go to `milestones_only` tiers, which copy every milestone, old ones included, and are never
pruned automatically. Every other tier keeps its newest `keep_last` copies per run (all when
unset); a copy is removed marker first (copies.remove).
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass

from dr.exporters.checkpoints.options import Milestone, Tier
from dr.exporters.checkpoints.scanning import Checkpoint


@dataclass(frozen=True)
class Held:
    """A complete copy a tier holds: what selection and retention need to know about it."""

    run: str
    step: int
    time: float  # the checkpoint's time (not the copy's)
    path: str  # the checkpoint's path relative to its root (the copy's key without the source)


def is_milestone(ck: Checkpoint, rule: Milestone | None) -> bool:
    if rule is None:
        return False
    if rule.step_multiple and ck.step % rule.step_multiple == 0:
        return True
    return bool(rule.marker) and any(fnmatch.fnmatchcase(name, rule.marker) for name in ck.files)


def select(tier: Tier, run: list[Checkpoint], held: list[Held], milestone: Milestone | None) -> list[Checkpoint]:
    """The complete checkpoints of one run (oldest step first) this tier should receive now,
    newest first (the newest copy shortens the exposure most), without those it holds."""
    complete = [c for c in run if c.complete]
    have = {h.path for h in held}
    if tier.milestones_only:
        chosen = [c for c in complete if is_milestone(c, milestone)]
    elif not tier.every_nth and not tier.min_interval:
        chosen = complete
    else:
        chosen = _thinned(tier, complete, held)
    chosen = [c for c in chosen if c.path not in have]
    if tier.keep_last is not None:  # never copy what retention would drop at once
        kept = sorted({h.step for h in held} | {c.step for c in chosen})[-tier.keep_last:]
        chosen = [c for c in chosen if c.step in kept]
    return sorted(chosen, key=lambda c: -c.step)


def _thinned(tier: Tier, complete: list[Checkpoint], held: list[Held]) -> list[Checkpoint]:
    anchor = max(held, key=lambda h: h.step, default=None)
    later = [c for c in complete if anchor is None or c.step > anchor.step]
    if anchor is None:
        return later[-1:]
    picked, count, since = [], 0, anchor.time
    interval = tier.interval_seconds
    for ck in later:
        count += 1
        if (tier.every_nth and count >= tier.every_nth) or (interval is not None and ck.time - since >= interval):
            picked.append(ck)
            count, since = 0, ck.time
    return picked


def to_prune(tier: Tier, held: list[Held]) -> list[Held]:
    """Copies of one run beyond the tier's keep_last, oldest first; never in a milestones tier."""
    if tier.milestones_only or tier.keep_last is None:
        return []
    ordered = sorted(held, key=lambda h: h.step)
    return ordered[: max(0, len(ordered) - tier.keep_last)]
