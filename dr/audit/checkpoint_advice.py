"""`dr advise checkpoints`: the checkpoint interval each training run should use, from what dr
measured (check 2 of docs/readiness.md; the formula is in dr.model.checkpoint_intervals).

Where the data comes from: every source's exporter is asked, through the contract
(Exporter.checkpoint_saves), for the saves the newest snapshot holding the source records:
per save, when its first and last file were written and when the run's previous save ended.
The plan's `readiness` section gives each run's MTBF, GPUs and GPU-hour price. Nothing is read
from the checkpoints themselves, so the advice works from the DR site after a failure too.
"""

from __future__ import annotations

import fnmatch
import math
from dataclasses import dataclass, field
from datetime import timedelta

from dr.contract.capabilities import overrides
from dr.contract import CheckpointSave, ExportContext, Exporter
from dr.contract.registry import PluginError, Registry
from dr.model.checkpoint_intervals import Figures, Save, lost_per_failure, measure, waste_fraction
from dr.model.durations import format_duration
from dr.model.plans import Plan, SourceSpec
from dr.model.snapshots import Snapshot
from dr.repository.catalogs import read_catalog
from dr.repository.repositories import Repository

HOUR = 3600.0


@dataclass
class Costs:
    mtbf_hours: float | None
    gpus: int
    gpu_cost_per_hour: float | None


@dataclass
class RunAdvice:
    source: str
    run: str
    snapshot: str
    costs: Costs
    figures: Figures
    rpo: timedelta | None
    newest: CheckpointSave | None = None  # the save a restarted run resumes from
    notes: list[str] = field(default_factory=list)

    @property
    def advised(self) -> bool:
        return self.figures.advised is not None

    def at(self, interval: float | None) -> dict | None:
        """GPU-hours lost per failure, and saves plus failures per day, at one interval."""
        f, c = self.figures, self.costs
        if interval is None or f.save_cost is None or not c.mtbf_hours:
            return None
        lost = lost_per_failure(interval, f.save_cost) / HOUR * c.gpus
        daily = waste_fraction(interval, f.save_cost, c.mtbf_hours * HOUR) * 24 * c.gpus
        out = {"interval_seconds": round(interval, 3), "lost_gpu_hours_per_failure": round(lost, 3),
               "wasted_gpu_hours_per_day": round(daily, 3)}
        if c.gpu_cost_per_hour is not None:
            out["cost_per_failure"] = round(lost * c.gpu_cost_per_hour, 2)
            out["cost_per_day"] = round(daily * c.gpu_cost_per_hour, 2)
        return out

    def tiers(self) -> dict | None:
        """near: every save at the advised interval, the newest two kept (one may be damaged);
        far: at the source's RPO (a regional loss loses at most that; every save when the RPO is
        shorter than the interval), else every fourth save;
        milestone: about one a day, as a step multiple when the step rate is known."""
        t = self.figures.advised
        if t is None:
            return None
        rpo = self.rpo.total_seconds() if self.rpo else None
        if rpo is None:
            far, why = 4 * t, "4 x the advised interval (the source has no rpo)"
        elif rpo >= t:
            far, why = rpo, "the source's rpo"
        else:
            far, why = t, (f"every save: the source's rpo {_dur(rpo)} is shorter than the advised interval, "
                           "so a regional loss loses up to one interval")
        out = {"near": {"min_interval": _dur(t), "keep_last": 2},
               "far": {"min_interval": _dur(far), "keep_last": 2, "why": why}}
        rate = self.figures.steps_per_second
        out["milestone"] = ({"step_multiple": _round2(rate * 24 * HOUR), "milestones_only": True}
                            if rate else {"every": "24h", "milestones_only": True,
                                          "why": "no step rate measured: mark one checkpoint a day"})
        return out

    def to_json(self) -> dict:
        f, c = self.figures, self.costs
        return {"source": self.source, "run": self.run, "snapshot": self.snapshot, "saves": f.saves,
                "save_cost_seconds": _r(f.save_cost), "mtbf_hours": c.mtbf_hours, "gpus": c.gpus,
                "gpu_cost_per_hour": c.gpu_cost_per_hour, "steps_per_second": _r(f.steps_per_second, 6),
                "current": self.at(f.interval) or ({"interval_seconds": _r(f.interval)}),
                "advised": self.at(f.advised) or None, "tiers": self.tiers(),
                "newest": {"step": self.newest.step, "resume": self.newest.resume or None} if self.newest else None,
                "formula": "advised = sqrt(2 x mtbf x save_cost); lost per failure = interval/2 + save_cost",
                "notes": f.notes + self.notes}


def advise(plan: Plan, registry: Registry, repo: Repository, runs: list[str] | None = None) -> list[RunAdvice]:
    """One RunAdvice per training run the newest snapshot of each source records (`runs`: only
    these run names or globs)."""
    snapshots = repo.snapshots()
    out = []
    for source in plan.spec.sources:
        exporter = _exporter(plan, registry, source)
        recorded = recorded_saves(repo, snapshots, source.name, exporter) if exporter else None
        if recorded is None:
            continue
        snap, by_run = recorded
        for run, saves in sorted(by_run.items()):
            if not runs or any(fnmatch.fnmatchcase(run, r) for r in runs):
                out.append(_run_advice(plan, source, snap.short_id, run, saves))
    return out


def recorded_saves(repo: Repository, snapshots: list[Snapshot], source: str,
                   exporter: Exporter) -> tuple[Snapshot, dict[str, list[CheckpointSave]]] | None:
    """The saves, per run, that the newest snapshot holding `source` records (None: no snapshot
    holds it, or its exporter keeps no checkpoints)."""
    holding = [s for s in snapshots if source in s.source_names()]
    if not holding or not overrides(type(exporter), "checkpoint_saves"):
        return None
    snap = holding[-1]
    by_run: dict[str, list[CheckpointSave]] = {}
    for save in exporter.checkpoint_saves([a for a in read_catalog(repo, snap.catalog) if a.source == source]):
        by_run.setdefault(save.run, []).append(save)
    return snap, by_run


def _exporter(plan: Plan, registry: Registry, source: SourceSpec) -> Exporter | None:
    try:
        cls = registry.get(source.type)
    except PluginError:
        return None  # the plan's plugin problems are reported when it loads
    if not overrides(cls, "checkpoint_saves"):
        return None  # keeps no checkpoints
    return cls(ExportContext(source.name, plan.options[source.name], plan.base_dir, source.sensitivity))


def _run_advice(plan: Plan, source: SourceSpec, snapshot: str, run: str, saves: list[CheckpointSave]) -> RunAdvice:
    costs = costs_for(plan, run)
    figures = measure([Save(s.step, s.duration, s.interval, s.previous_step) for s in saves],
                      costs.mtbf_hours * HOUR if costs.mtbf_hours else None)
    advice = RunAdvice(source.name, run, snapshot, costs, figures, source.rpo_delta,
                       max(saves, key=lambda s: s.step))
    if not costs.mtbf_hours:
        advice.notes.append("no MTBF: set readiness.mtbf_hours in the plan (or per run under readiness.runs)")
    if figures.save_cost is None:
        advice.notes.append("no save duration measured (single-file checkpoints, or records made before dr "
                            "measured saves): back up a multi-file checkpoint, or checkpoint as DCP")
    if figures.interval is None:
        advice.notes.append("no interval measured: the snapshot records no two consecutive saves of this run")
    return advice


def costs_for(plan: Plan, run: str) -> Costs:
    r = plan.spec.readiness
    rule = next((x for x in r.runs if fnmatch.fnmatchcase(run, x.run)), None)

    def pick(name: str):
        value = getattr(rule, name) if rule is not None else None
        return value if value is not None else getattr(r, name)
    return Costs(pick("mtbf_hours"), pick("gpus"), pick("gpu_cost_per_hour"))


def _dur(seconds: float) -> str:
    return format_duration(timedelta(seconds=max(1, int(round(seconds)))))


def _round2(x: float) -> int:
    """Two significant digits: a step multiple people can read (2_345 -> 2_300)."""
    if x < 1:
        return 1
    digits = int(math.floor(math.log10(x))) - 1
    return max(1, int(round(x, -digits)) if digits > 0 else int(round(x)))


def _r(x: float | None, places: int = 3) -> float | None:
    return None if x is None else round(x, places)
