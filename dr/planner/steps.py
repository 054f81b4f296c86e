"""Steps of a whole-plan restore: one per source of the snapshot, and what each one needs.

Where it sits: dr.planner.planning builds steps from the snapshot's catalog, judges their
needs (dr.planner.needs), finds their destinations (dr.planner.destinations), orders them
(dr.planner.ordering) and decides which may run. A step is the unit the journal records and a
resumed restore skips; inside a step the exporter restores item by item, each with an outcome.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from dr.contract import Exporter
from dr.model.artifacts import Artifact, Sensitivity
from dr.model.recovery import BLOCKED, Verdict, worst
from dr.planner.ordering_rules import IMAGE_KINDS, SECRET_STORE_KINDS, WORKLOAD_DEPENDENCY_KINDS



class StepStatus(str, Enum):
    """What planning decided for a step (dr.planner.planning.decide); JSON writes the value."""

    READY = "ready"
    REFUSED = "refused"
    HELD = "held"

    def __str__(self) -> str:
        return self.value


READY, REFUSED, HELD = StepStatus.READY, StepStatus.REFUSED, StepStatus.HELD


@dataclass
class Need:
    """One distinct thing a step's artifacts need, judged for the scenario."""

    kind: str
    reference: str
    verdict: Verdict
    reason: str
    provider: str | None = None  # the step of this restore that restores it (goes first)
    count: int = 1  # how many artifacts need it
    relies: bool = False  # the verdict counts on the provider's copy: it must succeed first

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "reference": self.reference, "verdict": self.verdict,
                "reason": self.reason, "provider": self.provider, "relies_on_provider": self.relies,
                "count": self.count}


@dataclass
class Unit:
    """One call of the exporter's restore(): these artifacts, to this destination."""

    label: str
    artifacts: list[Artifact]
    to: str | None
    remap: dict[str, str]
    how: str  # where `to` comes from, for people
    writes_origin: bool = True  # with `to` None: back where the artifacts came from (Destination)
    writes_to: tuple[str, ...] = ()  # with `to` None: the references of where it writes (Destination)

    def to_json(self) -> dict[str, Any]:
        return {"label": self.label, "artifacts": len(self.artifacts), "to": self.to,
                "remap": dict(self.remap), "how": self.how}


@dataclass
class Step:
    name: str  # the source's name
    exporter: str  # its exporter type
    artifacts: list[Artifact]
    instance: Exporter | None = None  # the exporter the planner asks (None: not installed)
    seq: int = 0  # 1-based position in restore order
    level: int = 0  # 0-based; the steps of a level run in parallel
    after: dict[str, str] = field(default_factory=dict)  # earlier step -> why
    requires: set[str] = field(default_factory=set)  # earlier steps that must succeed
    needs: list[Need] = field(default_factory=list)
    units: list[Unit] = field(default_factory=list)
    status: StepStatus = READY
    reason: str = ""
    forced: bool = False  # runs despite blockers (--force)
    problem: str = ""  # cannot run at all, whatever --force says (no destination)

    @property
    def verdict(self) -> Verdict:
        return worst(n.verdict for n in self.needs)

    @property
    def bytes(self) -> int:
        return sum(a.size for a in self.artifacts)

    def kinds(self) -> set[str]:
        return {a.kind for a in self.artifacts}

    @property
    def holds_secrets(self) -> bool:
        """Whether an item of this step may be named after a secret (its names are sealed in the
        catalog, docs/format.md 8.1): stored records then seal its failed items."""
        return any(a.sensitivity == Sensitivity.SECRET for a in self.artifacts)

    @property
    def roles(self) -> frozenset[str]:
        return self.instance.ordering.roles if self.instance is not None else frozenset()

    def blockers(self) -> list[Need]:
        return [n for n in self.needs if n.verdict == BLOCKED]

    def to_json(self) -> dict[str, Any]:
        return {"seq": self.seq, "name": self.name, "exporter": self.exporter, "level": self.level + 1,
                "artifacts": len(self.artifacts), "bytes": self.bytes, "verdict": self.verdict,
                "status": self.status, "reason": self.reason, "forced": self.forced,
                "after": [{"step": s, "why": why} for s, why in sorted(self.after.items())],
                "requires": sorted(self.requires), "needs": [n.to_json() for n in self.needs],
                "destinations": [u.to_json() for u in self.units]}


def group_steps(artifacts: list[Artifact], types: dict[str, str],
                instances: dict[str, Exporter] | None = None) -> list[Step]:
    """One step per source, in the plan's source order (`types`: source -> exporter type;
    `instances`: source -> the exporter the planner asks)."""
    by_source: dict[str, list[Artifact]] = {name: [] for name in types}
    for artifact in artifacts:
        if artifact.source in by_source:
            by_source[artifact.source].append(artifact)
    instances = instances or {}
    return [Step(name, types[name], found, instances.get(name)) for name, found in by_source.items()]


def runs_pods(step: Step) -> bool:
    return any(a.meta.get("workload") or any(d.kind in WORKLOAD_DEPENDENCY_KINDS for d in a.dependencies)
               for a in step.artifacts)


def matches(selector: str, step: Step) -> bool:
    """Whether a step is in the set a rule's selector names (dr.planner.ordering_rules)."""
    if selector.startswith("role:"):
        return selector[5:] in step.roles
    if selector.startswith("type:"):
        return step.exporter == selector[5:]
    if selector.startswith("kind:"):
        return selector[5:] in step.kinds()
    if selector == "@images":
        return "images" in step.roles or bool(step.kinds() & IMAGE_KINDS)
    if selector == "@secret-stores":
        return "secret-stores" in step.roles or bool(step.kinds() & SECRET_STORE_KINDS)
    if selector == "@workloads":
        return runs_pods(step)
    if selector == "@any":
        return True
    raise ValueError(f"unknown selector {selector!r} in dr.planner.ordering_rules")
