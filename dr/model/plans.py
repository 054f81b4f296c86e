"""DR plans: the declarative file that says what to protect, against what, and where to.

This module holds the plan's schema (pydantic models, unknown keys refused) and the resolved
objects other layers use (domain tree, placer). Loading and error reporting live in
dr.model.plan_loading; cross-field rules in dr.model.plan_rules.
"""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Annotated, Any, Iterator, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from dr.model.artifacts import Sensitivity
from dr.model.domains import DOMAIN_KINDS, DomainTree, FailureDomain
from dr.model.durations import parse_duration
from dr.model.locations import Location, Placer, PlacementRule

Name = Annotated[str, Field(pattern=r"^[a-z0-9]([a-z0-9._-]{0,61}[a-z0-9])?$")]
NAME_HINT = "a lower-case name of letters, digits, '.', '_' or '-'"

# Keys every source has; everything else under a source is the exporter plugin's options.
SOURCE_COMMON_KEYS = ("name", "type", "schedule", "rpo", "rto", "retention", "sensitivity", "targets")


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=False)


class DomainSpec(Strict):
    name: Name
    kind: Literal[DOMAIN_KINDS]  # type: ignore[valid-type]
    description: str = ""
    # The cloud region this domain is (eu-central-1, europe-west4, westeurope), for a domain of
    # kind region; without it, the domain's name. References naming the region are placed here.
    region: Name | None = None
    # The cloud zone this domain is (eu-central-1a, or the zone ID's name your cloud's volumes
    # give), for a domain of kind zone; without it, the domain's name. Volumes in it are placed here.
    zone: Name | None = None
    children: list["DomainSpec"] = Field(default_factory=list)


class LocationSpec(Strict):
    name: Name
    domain: str
    kind: str = ""
    url: str | None = None
    prefixes: list[str] = Field(default_factory=list)
    hosts: list[str] = Field(default_factory=list)

    def to_location(self) -> Location:
        prefixes = list(self.prefixes) + ([self.url] if self.url else [])
        return Location(self.name, self.domain, self.kind, prefixes, list(self.hosts))


class PlacementRuleSpec(Strict):
    match: str
    domain: str
    reason: str = ""


class RetentionSpec(Strict):
    keep_last: int | None = Field(default=None, ge=0)
    keep_hourly: int | None = Field(default=None, ge=0)
    keep_daily: int | None = Field(default=None, ge=0)
    keep_weekly: int | None = Field(default=None, ge=0)
    keep_monthly: int | None = Field(default=None, ge=0)
    keep_yearly: int | None = Field(default=None, ge=0)

    def is_empty(self) -> bool:
        return all(v is None for v in self.model_dump().values())


class EncryptionSpec(Strict):
    recipients: list[str] = Field(default_factory=list)
    # Where the private key needed to restore is kept: a reference placed like any other
    # (the audit checks it survives the failure).
    key_location: str | None = None
    # Environment variable a restore reads the identity file path from.
    identity_env: str = "DR_AGE_IDENTITY_FILE"


class ImmutabilitySpec(Strict):
    """S3 Object Lock retention that every object dr writes to the target gets (docs/format.md
    section 23). governance: users with s3:BypassGovernanceRetention may still delete;
    compliance: nobody can, not even the account's root user, until the date passes."""

    mode: Literal["governance", "compliance"]
    days: int = Field(ge=1, le=36500)


# Keys that were renamed: the old key is refused with the fix (an unknown-key problem names it).
RENAMED_KEYS = {
    "object_lock": "immutability: {mode: governance|compliance, days: N} in place of object_lock: "
                   "dr now sets the retention of every object it writes (docs/format.md section 23)",
}


class TargetSpec(Strict):
    name: Name
    url: str
    domain: str
    region: str | None = None
    endpoint_url: str | None = None
    profile: str | None = None
    # Where the credentials that reach this target are kept (placed like any reference).
    credentials_location: str | None = None
    immutability: ImmutabilitySpec | None = None


class SourceSpec(BaseModel):
    """One exporter instance. Extra keys are the plugin's options, validated by the plugin."""

    model_config = ConfigDict(extra="allow")

    name: Name
    type: str
    schedule: str | None = None
    rpo: str | None = None
    rto: str | None = None
    retention: RetentionSpec | None = None
    sensitivity: Sensitivity | None = None
    targets: list[str] = Field(default_factory=list)

    @field_validator("schedule")
    @classmethod
    def _cron(cls, value: str | None) -> str | None:
        if value is None:
            return value
        from croniter import croniter  # only a plan with schedules pays for importing it

        if not (len(value.split()) == 5 and croniter.is_valid(value)):
            raise ValueError("a 5-field cron expression such as '0 * * * *'")
        return value

    @field_validator("rpo", "rto")
    @classmethod
    def _duration(cls, value: str | None) -> str | None:
        if value is not None:
            parse_duration(value)
        return value

    @property
    def options(self) -> dict[str, Any]:
        return dict(self.model_extra or {})

    @property
    def rpo_delta(self) -> timedelta | None:
        return parse_duration(self.rpo) if self.rpo else None

    @property
    def rto_delta(self) -> timedelta | None:
        return parse_duration(self.rto) if self.rto else None


# -- restore: remaps and RTO phase estimates (dr restore, dr drill; docs/restore.md) -------------
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]i?b|b)?\s*$", re.I)
_SIZE_UNITS = {"b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
               "kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40}


def parse_size(text: str | int) -> int:
    """'40GiB', '1.5GB', '512' (bytes) -> bytes; ValueError names the expected form."""
    if isinstance(text, int) and not isinstance(text, bool) and text >= 0:
        return text
    match = _SIZE.match(str(text))
    if not match:
        raise ValueError("a size such as 512MiB, 40GiB or 1.5GB")
    return int(float(match.group(1)) * _SIZE_UNITS[(match.group(2) or "b").lower()])


class RemapSpec(Strict):
    """Where something lost lives after the failure: the restore rewrites `old` to `new`.

    A remap is the operator's statement that the copy exists at `new` (a mirrored registry,
    a replicated bucket, a pushed remote); dr judges where `new` is placed, it does not probe it.
    """

    # which kinds exist is the exporters' word (contract v2 remap_kinds), checked when the plan
    # is loaded with the installed exporters (dr.model.plan_loading)
    kind: Name
    old: str = Field(min_length=1)
    new: str = Field(min_length=1)
    sources: list[str] = Field(default_factory=list)  # only these sources; empty: every source
    reason: str = ""


class RtoSpec(Strict):
    """The parts of the RTO that no backup can measure, as the operator knows them."""

    detection: str | None = None  # noticing the failure and deciding to fail over
    cleanup: str | None = None  # fencing and cleaning up what is left of the failed domain
    requeue: str | None = None  # jobs re-queued and admitted again (Kueue)
    communication_rebuild: str | None = None  # NCCL / communication groups formed again
    steady_throughput: str | None = None  # back to the training throughput before the failure
    image_bytes: str | int | None = None  # container images the workloads pull (e.g. 40GiB)
    throughput: str | None = None  # bytes/s when no backup measured one (e.g. 200MiB/s)

    @field_validator("detection", "cleanup", "requeue", "communication_rebuild", "steady_throughput")
    @classmethod
    def _duration(cls, value: str | None) -> str | None:
        if value is not None:
            parse_duration(value)
        return value

    @field_validator("image_bytes")
    @classmethod
    def _size(cls, value: str | int | None) -> str | int | None:
        if value is not None:
            parse_size(value)
        return value

    @field_validator("throughput")
    @classmethod
    def _rate(cls, value: str | None) -> str | None:
        if value is not None:
            parse_size(value.strip().removesuffix("/s"))
        return value

    def seconds(self, part: str) -> float | None:
        value = getattr(self, part)
        return parse_duration(value).total_seconds() if value else None

    @property
    def throughput_bytes(self) -> float | None:
        return float(parse_size(self.throughput.strip().removesuffix("/s"))) if self.throughput else None


class ResumeSpec(Strict):
    """How `dr drill --training RUN` resumes the run from its DR copy (docs/readiness.md, "Training
    recovery drills"). `command` is an argv (no shell); `{world_size}`, `{checkpoint}` (the
    restored checkpoint's path), `{steps}`, `{run}` and `{step}` in it are replaced."""

    command: list[str] = Field(min_length=1)
    env: dict[str, str] = Field(default_factory=dict)
    workdir: str | None = None  # relative to the plan's folder; default: the drill's scratch folder
    time_limit: str = "30m"  # the resumed process is stopped after this long, whatever it did
    steps: int = Field(default=20, ge=1)  # optimizer steps to train after the load, then stop
    # The failed run's progress log (DR_PROGRESS_FILE of the run that failed), relative to the
    # plan's folder: the oracle the resumed steps must repeat, and the rate before the failure.
    failed_log: str | None = None
    tolerance: float = Field(default=1e-6, ge=0)  # relative, for losses and learning rates
    steady_within: float = Field(default=0.10, gt=0, lt=1)  # steady: the rate within this of the rate before

    @field_validator("time_limit")
    @classmethod
    def _limit(cls, value: str) -> str:
        parse_duration(value)
        return value

    @property
    def time_limit_seconds(self) -> float:
        return parse_duration(self.time_limit).total_seconds()


class RunCostsSpec(Strict):
    """What a failure of the training runs `run` (a glob) costs; unset fields come from `readiness`."""

    run: str = Field(min_length=1)
    mtbf_hours: float | None = Field(default=None, gt=0)
    gpus: int | None = Field(default=None, ge=1)
    gpu_cost_per_hour: float | None = Field(default=None, ge=0)
    # The workload (namespace/name) that writes these runs' checkpoints: dr audit --readiness
    # compares their measured saves with its spot notice. Unset: a workload named like the run.
    job: str | None = Field(default=None, pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?/[a-z0-9]([-.a-z0-9]*[a-z0-9])?$")
    # How `dr drill --training` resumes these runs from their DR copies (unset: they cannot be drilled).
    resume: ResumeSpec | None = None


class ReadinessSpec(Strict):
    """Recovery-readiness inputs (docs/readiness.md): the mean time between failures of a training
    job (the whole allocation: a node's MTBF divided by the job's nodes), the GPUs it holds, and
    what a GPU-hour costs; `runs` overrides them per run (first match wins)."""

    mtbf_hours: float | None = Field(default=None, gt=0)
    gpus: int = Field(default=1, ge=1)
    gpu_cost_per_hour: float | None = Field(default=None, ge=0)
    runs: list[RunCostsSpec] = Field(default_factory=list)


class RestoreSpec(Strict):
    remaps: list[RemapSpec] = Field(default_factory=list)
    rto: RtoSpec = Field(default_factory=RtoSpec)


class PlanSpec(Strict):
    version: Literal[1]
    name: Name
    description: str = ""
    failure_domains: list[DomainSpec] = Field(min_length=1)
    locations: list[LocationSpec] = Field(default_factory=list)
    placement_rules: list[PlacementRuleSpec] = Field(default_factory=list)
    protects_against: list[str] = Field(min_length=1)
    encryption: EncryptionSpec = Field(default_factory=EncryptionSpec)
    targets: list[TargetSpec] = Field(min_length=1)
    sources: list[SourceSpec] = Field(min_length=1)
    retention: RetentionSpec = Field(default_factory=RetentionSpec)
    # Where dr's own container image is pulled from (the audit checks it survives).
    dr_image: str | None = None
    # Remaps and RTO phase estimates for dr restore and dr drill (docs/restore.md).
    restore: RestoreSpec = Field(default_factory=RestoreSpec)
    # MTBF and GPU costs of training runs, for dr advise checkpoints (docs/readiness.md).
    readiness: ReadinessSpec = Field(default_factory=ReadinessSpec)


class NotInPlan(KeyError):
    """A source or target name the plan does not declare: the operator's mistake, named with
    the names that exist. A KeyError, so a lookup written against one keeps working."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class Plan:
    """A validated plan plus the objects derived from it. Build with dr.model.plan_loading."""

    def __init__(self, spec: PlanSpec, path: str, base_dir: str, options: dict[str, Any]):
        self.spec = spec
        self.path = path
        self.base_dir = base_dir
        # Exporter options, validated by each plugin, by source name.
        self.options = options
        self.domains = build_domain_tree(spec.failure_domains)
        self.placer = Placer(
            [loc.to_location() for loc in spec.locations],
            [PlacementRule(r.match, r.domain, r.reason) for r in spec.placement_rules],
            cloud_regions(spec.failure_domains),
            cloud_zones(spec.failure_domains),
        )

    @property
    def name(self) -> str:
        return self.spec.name

    def source(self, name: str) -> SourceSpec:
        for source in self.spec.sources:
            if source.name == name:
                return source
        raise self._not_in_plan("source", name, [s.name for s in self.spec.sources])

    def target(self, name: str) -> TargetSpec:
        for target in self.spec.targets:
            if target.name == name:
                return target
        raise self._not_in_plan("target", name, [t.name for t in self.spec.targets])

    def _not_in_plan(self, kind: str, name: str, known: list[str]) -> NotInPlan:
        return NotInPlan(f"no {kind} '{name}' in {self.path} ({kind}s: {', '.join(known)})")

    def primary_target(self) -> TargetSpec:
        """The first target that survives every protected domain (plan_rules guarantees one)."""
        for target in self.spec.targets:
            if not any(self.domains.is_lost(target.domain, [d]) for d in self.spec.protects_against):
                return target
        return self.spec.targets[0]

    def retention_for(self, source: SourceSpec) -> RetentionSpec:
        return source.retention if source.retention is not None else self.spec.retention


def cloud_regions(specs: list[DomainSpec]) -> dict[str, str]:
    """Cloud region -> the domain of kind region that is it (its `region`, else its name);
    the first declared wins (plan_rules refuses a region declared twice)."""
    found: dict[str, str] = {}
    for spec in all_domains(specs):
        if spec.kind == "region":
            found.setdefault(spec.region or spec.name, spec.name)
    return found


def cloud_zones(specs: list[DomainSpec]) -> dict[str, str]:
    """Cloud zone -> the domain of kind zone that is it (its `zone`, else its name); first wins."""
    found: dict[str, str] = {}
    for spec in all_domains(specs):
        if spec.kind == "zone":
            found.setdefault(spec.zone or spec.name, spec.name)
    return found


def all_domains(specs: list[DomainSpec]) -> Iterator[DomainSpec]:
    """Every domain of the tree, parents first, in the order declared."""
    stack = list(reversed(specs))
    while stack:
        spec = stack.pop()
        yield spec
        stack.extend(reversed(spec.children))


def build_domain_tree(specs: list[DomainSpec]) -> DomainTree:
    tree = DomainTree()

    def walk(spec: DomainSpec, parent: str | None) -> None:
        tree.add(FailureDomain(spec.name, spec.kind, parent, spec.description))
        for child in spec.children:
            walk(child, spec.name)

    for spec in specs:
        walk(spec, None)
    return tree
