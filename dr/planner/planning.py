"""The restore plan: every source of a snapshot as one ordered set of steps, judged for a scenario.

Where it sits: dr.restore.restoring reads the snapshot and its catalog and calls
plan_restore(); the plan is then printed (--dry-run), or executed step by step with a journal
(dr.restore.executing). Planning reads nothing but the catalog and blob names: it never
touches a destination, so a dry run is safe anywhere.

A step is decided in restore order:
  refused  it cannot run: no destination, or no data in the snapshot (--force changes
           nothing), or a need is a blocker (--force runs it anyway, and the journal says so);
  held     a step it requires (REQUIRES edge: it restores something this step needs) is
           refused or held: restoring this one would point at nothing;
  ready    it will run.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from pydantic import BaseModel, ValidationError

from dr.contract import ExportContext, Exporter
from dr.contract.registry import PluginError, Registry
from dr.model.artifacts import Artifact
from dr.model.plans import Plan, TargetSpec
from dr.model.recovery import (Evidence, RecoveryJudge, essentials, judge_essentials, scenario,
                               service_facts)
from dr.model.snapshots import Snapshot, SourceResult
from dr.planner.destinations import provided_at, units_for
from dr.planner.needs import NeedJudge, circular_essentials, held_copies, key_need, precondition_needs
from dr.planner.ordering import order
from dr.planner.steps import HELD, READY, REFUSED, Need, Step, StepStatus, group_steps


@dataclass
class RestorePlan:
    plan: str
    snapshot: Snapshot
    target: str
    failed: tuple[str, ...]
    label: str  # the scenario, for people: "train-eu1 (cluster) fails"
    steps: list[Step]  # in restore order
    preconditions: list[Need] = field(default_factory=list)
    force: bool = False
    destinations: dict[str, str] = field(default_factory=dict)  # --to SOURCE=DEST

    def step(self, name: str) -> Step:
        return next(s for s in self.steps if s.name == name)

    def levels(self) -> list[list[Step]]:
        out: list[list[Step]] = []
        for step in self.steps:
            while len(out) <= step.level:
                out.append([])
            out[step.level].append(step)
        return out

    def with_status(self, status: StepStatus) -> list[Step]:
        return [s for s in self.steps if s.status == status]

    @property
    def blocked(self) -> bool:
        """Some step is refused because of blockers (what --force would override)."""
        return any(s.status == REFUSED and s.blockers() and not s.problem for s in self.steps)

    def to_json(self) -> dict[str, Any]:
        return {"plan": self.plan, "snapshot": {"id": self.snapshot.id, "time": self.snapshot.to_json()["time"]},
                "target": self.target, "failed": list(self.failed), "scenario": self.label,
                "force": self.force, "destinations": dict(self.destinations),
                "preconditions": [n.to_json() for n in self.preconditions],
                "steps": [s.to_json() for s in self.steps]}


def planning_exporters(plan: Plan, registry: Registry) -> dict[str, Exporter]:
    """source -> the exporter the planner asks about it (contract v2); a source whose exporter
    is not installed or does not load is left out, and its step is refused with that reason."""
    out: dict[str, Exporter] = {}
    for source in plan.spec.sources:
        try:
            cls = registry.get(source.type)
        except PluginError:
            continue
        options = plan.options.get(source.name)
        if not isinstance(options, BaseModel):  # a plan loaded without the plugins
            options = _options(cls, options or {})
        out[source.name] = cls(ExportContext(source.name, options, plan.base_dir, source.sensitivity))
    return out


def _options(cls: type[Exporter], raw: dict) -> BaseModel:
    """The source's options; unvalidated when they do not validate (a plan loaded without the
    plugins, read for its declarations only: `dr restore` loads plans with them and fails first)."""
    try:
        return cls.Options.model_validate(raw)
    except ValidationError:
        return cls.Options.model_construct(**raw)


def plan_restore(plan: Plan, snapshot: Snapshot, artifacts: list[Artifact], target: TargetSpec, *,
                 exporters: dict[str, Exporter] | None = None, failed: list[str] | tuple[str, ...] = (),
                 destinations: dict[str, str] | None = None, force: bool = False,
                 blob_exists: Callable[[str], bool] = lambda digest: True) -> RestorePlan:
    """Judge, order and decide every step (raises UnknownDomain for a domain not in the plan).

    `exporters`: source -> exporter (default: planning_exporters() over the installed ones);
    the core asks each one alike."""
    if exporters is None:
        exporters = planning_exporters(plan, Registry())
    destinations = dict(destinations or {})
    failure = scenario(plan.domains, failed, plan.placer.locations, plan.spec.protects_against)
    services = service_facts((d.kind, d.reference, d.detail) for a in artifacts for d in a.dependencies)
    evidence = Evidence(plan, held_copies(plan, artifacts), lambda c: all(blob_exists(d) for d in c.chunks),
                        services=services)
    items = essentials(plan, evidence.placements, needs_key=True)
    essentials_judged = judge_essentials(items, failure.lost, failure.lost_locations)
    judge = RecoveryJudge(evidence, failure.lost, essentials_judged.reachable(target.name),
                          lost_locations=failure.lost_locations)
    held = {r.name: r for r in snapshot.sources}
    steps = group_steps(artifacts, {s.name: s.type for s in plan.spec.sources}, exporters)
    circles = circular_essentials(plan, items, target, failure, artifacts)
    preconditions = precondition_needs(plan, essentials_judged, target, failure.label, circles)
    key = key_need(plan, essentials_judged, failure.label, circles)
    needs = NeedJudge(plan, judge, failure.label, circles)
    provided = provided_at(artifacts)
    for step in steps:
        step.units, step.problem = units_for(plan, step, destinations.get(step.name), provided)
        step.problem = _no_data(step, held) or step.problem
        encrypted = key is not None and any(a.encrypted for a in step.artifacts)
        step.needs = preconditions + needs.judge_step(step) + ([key] if encrypted else [])
    ordered = order(steps)
    decide(ordered, force)
    return RestorePlan(plan.name, snapshot, target.name, failure.failed, failure.label, ordered, preconditions, force,
                       destinations)


def _no_data(step: Step, held: dict[str, SourceResult]) -> str:
    result = held.get(step.name)
    if result is None:
        return f"the snapshot holds no data for source {step.name} (it was not part of that backup)"
    if not result.ok:
        return f"the snapshot holds no data for source {step.name}: its backup failed ({result.error})"
    return ""


def decide(steps: list[Step], force: bool) -> None:
    """Refused, held or ready, in restore order (a step's prerequisites are decided first)."""
    status = {}
    for step in steps:
        blockers = step.blockers()
        waiting = sorted(p for p in step.requires if status.get(p) != READY)
        if step.problem:
            step.status, step.reason = REFUSED, step.problem
        elif blockers and not force:
            step.status, step.reason = REFUSED, _blocked(blockers)
        elif waiting:
            step.status = HELD
            step.reason = "it needs what " + ", ".join(f"step {p} ({status.get(p)})" for p in waiting) + \
                " restores, and that step will not run"
        else:
            step.status, step.forced = READY, bool(blockers)
            step.reason = f"forced past {_blocked(blockers)}" if blockers else _ready(step)
        status[step.name] = step.status


def _blocked(blockers: list[Need]) -> str:
    shown = "; ".join(f"{n.kind} '{n.reference}': {n.reason}" for n in blockers[:3])
    more = f" (and {len(blockers) - 3} more)" if len(blockers) > 3 else ""
    return f"{len(blockers)} blocker{'s' * (len(blockers) != 1)}: {shown}{more}"


def _ready(step: Step) -> str:
    counts: dict[str, int] = {}
    for need in step.needs:
        counts[need.verdict] = counts.get(need.verdict, 0) + 1
    judged = ", ".join(f"{n} {v}" for v, n in sorted(counts.items())) or "no dependencies"
    return f"{len(step.artifacts)} artifacts; needs: {judged}"
