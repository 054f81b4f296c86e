"""How often a training run should checkpoint: Young's first-order optimum (Young 1974, "A
first order approximation to the optimum checkpoint interval", CACM 17(9); Daly 2006, "A
higher order estimate of the optimum checkpoint interval for restart dumps", FGCS 22(3)).

Why: checkpoint too rarely and a failure throws away hours of GPU work; too often and the
saves themselves eat the GPUs. With a job's mean time between failures M and the time one
save stalls training δ (its save cost), a run checkpointing every T loses, per hour of wall
time, the fraction

    waste(T) = δ / T                  (saving)
             + (T/2 + δ) / M          (failures: each loses half an interval of work on
                                       average, failures falling uniformly in time, plus the
                                       save in progress or redone)

whose minimum is at T* = sqrt(2 · M · δ) (the δ/M term does not depend on T). Daly's
higher-order estimate differs from it by under 5 % while δ < M/50, so the first-order form is
used and the inputs' own error dominates. All times are seconds.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field


def optimal_interval(mtbf: float, save: float) -> float:
    """Young/Daly first order: sqrt(2 · MTBF · save cost)."""
    return math.sqrt(2.0 * mtbf * save)


def lost_per_failure(interval: float, save: float) -> float:
    """Wall time of work one failure costs, on average: T/2 + δ."""
    return interval / 2.0 + save


def waste_fraction(interval: float, save: float, mtbf: float) -> float:
    """Share of wall time lost to saves and failures: δ/T + (T/2 + δ)/M."""
    return save / interval + lost_per_failure(interval, save) / mtbf


@dataclass(frozen=True)
class Save:
    step: int
    duration: float  # first to last file written; 0 when the checkpoint is one file
    interval: float | None  # from the end of the run's previous save; None when unknown
    previous_step: int | None = None


@dataclass
class Figures:
    """What one run's saves and costs say: the measured and the advised interval, side by side."""

    saves: int
    save_cost: float | None  # median measured save duration
    interval: float | None  # median measured interval
    steps_per_second: float | None
    advised: float | None
    notes: list[str] = field(default_factory=list)


def measure(saves: list[Save], mtbf: float | None) -> Figures:
    durations = [s.duration for s in saves if s.duration > 0]
    intervals = [s.interval for s in saves if s.interval is not None and s.interval > 0]
    notes = []
    if len(durations) < len(saves):
        notes.append(f"{len(saves) - len(durations)} of {len(saves)} saves have no measurable duration "
                     "(a single file, or files written at once): left out of the save cost")
    cost = statistics.median(durations) if durations else None
    interval = statistics.median(intervals) if intervals else None
    advised = optimal_interval(mtbf, cost) if mtbf and cost else None
    return Figures(len(saves), cost, interval, _rate(saves), advised, notes)


def _rate(saves: list[Save]) -> float | None:
    """Training steps per second between consecutive recorded saves (for milestone steps)."""
    pairs = [(s.step - s.previous_step, s.interval) for s in saves
             if s.interval and s.interval > 0 and s.previous_step is not None and s.step > s.previous_step]
    if not pairs:
        return None
    return sum(n for n, _ in pairs) / sum(t for _, t in pairs)
