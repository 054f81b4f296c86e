"""The `checkpoints` exporter's plan options, validated when the plan is loaded.

Why a separate module: the option schema is the exporter's public interface (plans are
written against it), so it is read and reviewed on its own. Every rule that can be checked
without touching storage is checked here, so a broken plan fails at `dr plan`/load time with
a field path, not half-way through a backup.

    roots:        where trainers write checkpoints: `s3://bucket/prefix` or a directory,
                  each optionally {url, endpoint_url, region, profile}
    run_pattern:  regex with named groups `run` and `step`, full-matched against a
                  checkpoint's path relative to its root (default: `<run>/step-<N>` and the
                  usual trainer spellings, see DEFAULT_RUN_PATTERN)
    markers:      files a checkpoint must hold to count as complete ("COMPLETE", or
                  {pattern: "rank_*.done", count: 8})
    settle_seconds, abort_multipart_after, allow_source_cleanup
    dr_copy:      where DR copies go unless a tier says otherwise
    tiers:        [{name, to, every_nth, min_interval, milestones_only, keep_last}]
    milestone:    {step_multiple, marker}: which checkpoints are milestones
    server_side_copy: copy inside the object store when source and copy share an endpoint
    parallel_files: files copied at once (default 4)
    max_buffer_mib: the memory budget for file bytes in flight (default 144)
    part_size_mib: unset (default): chosen per file, one PUT up to half of max_buffer_mib
                  (at most 96 MiB), larger files in 16 MiB parts
                  (dr/kits/places/parts.py, part_size_for); a number fixes the part size
    resume:       {role, requires, parts, runs}: what a checkpoint must hold for its run to
                  continue from it (resuming.py; docs/readiness.md, check 1)
    shards:       {count, executor, min_bytes, parallelism, retries, kubernetes}: one copy's
                  files split across N shard processes or an Indexed Job (sharding/)
"""

from __future__ import annotations

import fnmatch
import re
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import Field, field_validator, model_validator

from dr.exporters.checkpoints.formats.completeness import MarkerRule
from dr.exporters.checkpoints.formats.discovery import META, META_TMP, ST_INDEX
from dr.exporters.checkpoints.resuming import DEFAULT_REQUIRES, PARTS
from dr.contract import ExporterOptions
from dr.model.durations import parse_duration

#: `<run>/<step dir or file>`: step-100, step_100, step100, checkpoint-100 (HF Trainer),
#: global_step100 (DeepSpeed), iter_0000100 (Megatron), ckpt-100; a single-file checkpoint
#: may carry an extension (run/step-100.pt). The run may span several directory levels.
DEFAULT_RUN_PATTERN = (
    r"(?P<run>.+)/(?:step|checkpoint|global_step|iter|ckpt)[-_]?(?P<step>\d+)(?:\.[A-Za-z0-9]+)?"
)
_TIER_NAME = re.compile(r"^[a-z0-9]([a-z0-9._-]{0,61}[a-z0-9])?$")


class PlaceSpec(ExporterOptions):
    """An S3 prefix (any S3-compatible endpoint) or a directory (relative: the plan's folder)."""

    url: str  # the s3://bucket[/prefix] URL (no credentials, query or port) or the directory
    endpoint_url: str | None = None  # an S3-compatible endpoint (MinIO, Ceph); s3:// only
    region: str | None = None  # the bucket's region; s3:// only
    profile: str | None = None  # the AWS profile whose credentials read it; s3:// only

    @model_validator(mode="before")
    @classmethod
    def _plain_string(cls, value: Any) -> Any:
        return {"url": value} if isinstance(value, str) else value

    @field_validator("url")
    @classmethod
    def _url(cls, url: str) -> str:
        url = url.strip()
        if not url:
            raise ValueError("an s3://bucket/prefix URL or a directory")
        if "://" in url:
            parts = urlsplit(url)
            if parts.scheme != "s3" or not parts.netloc:
                raise ValueError("only s3://bucket[/prefix] URLs or plain directories")
            if "@" in parts.netloc or parts.query or parts.fragment or parts.port:
                raise ValueError("an s3:// URL names a bucket and prefix only (credentials never go in it)")
        return url.rstrip("/") if url != "/" else url

    @model_validator(mode="after")
    def _endpoint_needs_s3(self) -> "PlaceSpec":
        if not self.is_s3 and (self.endpoint_url or self.region or self.profile):
            raise ValueError("endpoint_url, region and profile apply to s3:// URLs only")
        return self

    @property
    def is_s3(self) -> bool:
        return self.url.startswith("s3://")

    def same_store_as(self, other: "PlaceSpec") -> bool:
        """Same endpoint and credentials: server-side copy is possible between the two."""
        return (self.is_s3 and other.is_s3 and (self.endpoint_url or "").rstrip("/")
                == (other.endpoint_url or "").rstrip("/") and self.profile == other.profile)


class Marker(ExporterOptions):
    """A required marker file: exact name or glob, optionally an exact count (one per rank)."""

    pattern: str = Field(min_length=1)  # an exact name or a glob (rank_*.done)
    count: int | None = Field(default=None, ge=1)  # how many files must match (one per rank); none: at least one

    @model_validator(mode="before")
    @classmethod
    def _plain_string(cls, value: Any) -> Any:
        return {"pattern": value} if isinstance(value, str) else value

    def rule(self) -> MarkerRule:
        return MarkerRule(self.pattern, self.count)


class Milestone(ExporterOptions):
    """A checkpoint is a milestone when its step is a multiple of step_multiple, or when it
    holds the marker file (either rule suffices)."""

    step_multiple: int | None = Field(default=None, ge=1)  # steps that are multiples of this are milestones
    marker: str | None = Field(default=None, min_length=1)  # a checkpoint holding this file is a milestone

    @model_validator(mode="after")
    def _one_rule(self) -> "Milestone":
        if self.step_multiple is None and self.marker is None:
            raise ValueError("a milestone needs step_multiple, marker, or both")
        return self


class Tier(ExporterOptions):
    """Which checkpoints go to one DR target, and how many copies it keeps per run.

    With neither every_nth nor min_interval every complete checkpoint is copied. every_nth
    and min_interval thin the copies, counted from the newest copy the tier already holds
    (either condition selects); milestones_only copies milestones and never prunes them.
    """

    name: str  # lower-case; the copy's folder and the RPO row name it
    to: PlaceSpec | None = None  # where this tier's copies go, as a root is written (default: dr_copy)
    #: copy every n-th checkpoint, counted from the newest copy the tier holds
    every_nth: int | None = Field(default=None, ge=1)
    min_interval: str | None = None  # copy when the newest copy is older than this duration (6h)
    milestones_only: bool = False  # copy milestones only, never pruned
    keep_last: int | None = Field(default=None, ge=1)  # the newest copies kept per run in this tier (default: all)

    @field_validator("name")
    @classmethod
    def _name(cls, name: str) -> str:
        if not _TIER_NAME.match(name):
            raise ValueError("a lower-case name of letters, digits, '.', '_' or '-'")
        return name

    @field_validator("min_interval")
    @classmethod
    def _interval(cls, value: str | None) -> str | None:
        if value is not None:
            parse_duration(value)
        return value

    @model_validator(mode="after")
    def _milestones_never_pruned(self) -> "Tier":
        if self.milestones_only and self.keep_last is not None:
            raise ValueError("a milestones_only tier is never pruned automatically: remove keep_last")
        if self.milestones_only and (self.every_nth or self.min_interval):
            raise ValueError("milestones_only selects milestones; every_nth/min_interval do not apply")
        return self

    @property
    def interval_seconds(self) -> float | None:
        return parse_duration(self.min_interval).total_seconds() if self.min_interval else None


Role = Literal["training", "release"]


class ResumeRun(ExporterOptions):
    """A role or requirement for the runs whose name matches `run` (a glob); first match wins."""

    run: str = Field(min_length=1)  # a glob over run names; the first match wins
    role: Role | None = None  # this run's role
    requires: list[str] | None = None  # this run's required parts


class Resume(ExporterOptions):
    """What a checkpoint must hold for its run to continue from it. A `training` run's
    checkpoint that lacks a required part is a finding ("serves, cannot resume"); a `release`
    (weights published for serving) is never held to it. `parts` adds part names, or replaces
    the globs of a built-in one (resuming.PARTS)."""

    role: Role = "training"  # training, or release (a model release is never held to the training parts)
    #: the parts a training run's checkpoint must hold
    requires: list[str] = Field(default_factory=lambda: list(DEFAULT_REQUIRES))
    #: new part names, or other globs for a built-in one (ema: ["ema*"])
    parts: dict[str, list[str]] = Field(default_factory=dict)
    runs: list[ResumeRun] = Field(default_factory=list)  # per run: its own role and requires

    @model_validator(mode="after")
    def _known_parts(self) -> "Resume":
        known = set(PARTS) | set(self.parts)
        for where, names in [("requires", self.requires)] + [(f"runs[{i}].requires", r.requires or [])
                                                             for i, r in enumerate(self.runs)]:
            unknown = sorted(set(names) - known)
            if unknown:
                raise ValueError(f"{where}: unknown part(s) {unknown}; known: {sorted(known)} "
                                 "(declare new ones under resume.parts)")
        return self

    def for_run(self, run: str) -> tuple[str, tuple[str, ...]]:
        """(role, required parts) of one run."""
        rule = next((r for r in self.runs if fnmatch.fnmatchcase(run, r.run)), None)
        role = (rule.role if rule and rule.role else None) or self.role
        requires = rule.requires if rule and rule.requires is not None else self.requires
        return role, tuple(requires)

    def part_globs(self) -> dict[str, tuple[str, ...]]:
        return {**PARTS, **{k: tuple(g.lower() for g in v) for k, v in self.parts.items()}}
class ShardCluster(ExporterOptions):
    """Where and as what the shards of the `kubernetes` executor run (an Indexed Job)."""

    kubeconfig: str | None = None  # relative: the plan's folder; none: in-cluster, then ~/.kube
    context: str | None = None  # its context (default: the current one)
    namespace: str | None = None  # none: the pod's own namespace (in-cluster), else `default`
    image: str | None = None  # none: $DR_IMAGE (dr's own image, the plan's dr_image)
    service_account: str = "dr-backup"  # the Job's service account
    secret: str = "dr-credentials"  # the AWS keys, as `dr deploy render` names them
    timeout: str = "6h"  # the Job's activeDeadlineSeconds

    @field_validator("timeout")
    @classmethod
    def _timeout(cls, value: str) -> str:
        parse_duration(value)
        return value

    @property
    def timeout_seconds(self) -> int:
        return int(parse_duration(self.timeout).total_seconds())


class Shards(ExporterOptions):
    """One checkpoint copy's files split across `count` shards (sharding/): each copies its
    share and writes a result object; the copy's manifest and marker follow only once every
    shard's result is present and verified."""

    count: int = Field(ge=1, le=1000)  # the number of shards (1: unsharded)
    #: local: child processes of dr on this host; kubernetes: one Indexed Job of dr's image
    executor: Literal["local", "kubernetes"] = "local"
    min_bytes: int = Field(default=1 << 30, ge=0)  # smaller checkpoints are copied unsharded
    parallelism: int | None = Field(default=None, ge=1)  # none: all shards at once
    retries: int = Field(default=2, ge=0, le=20)  # per shard (backoffLimitPerIndex)
    kubernetes: ShardCluster = Field(default_factory=ShardCluster)  # where the Indexed Job runs


class CheckpointsOptions(ExporterOptions):
    #: where trainers write checkpoints: s3://bucket/prefix or a directory (relative: the plan's folder)
    roots: list[PlaceSpec] = Field(min_length=1)
    #: a regex with groups run and step, full-matched against a checkpoint's path under its root
    run_pattern: str = DEFAULT_RUN_PATTERN
    #: files a checkpoint must hold to count as complete, each a name or {pattern, count}
    markers: list[Marker] = Field(default_factory=list)
    #: list, wait this long, list again: a checkpoint still being written is not copied this time
    settle_seconds: float = Field(default=30.0, ge=0)
    dr_copy: PlaceSpec | None = None  # where copies go unless a tier names its own `to`
    #: DR targets, each {name, to, every_nth, min_interval, milestones_only, keep_last} (default: one, near)
    tiers: list[Tier] = Field(default_factory=list)
    milestone: Milestone | None = None  # {step_multiple, marker}: which checkpoints are milestones
    #: what a checkpoint must hold for its run to continue from it (docs/readiness.md)
    resume: Resume = Field(default_factory=Resume)
    #: leftovers older than this are cleaned (dr's pending multipart uploads, orphan files)
    abort_multipart_after: str = "24h"
    allow_source_cleanup: bool = False  # also abort the source's multipart uploads older than abort_multipart_after
    server_side_copy: bool = True  # copy inside one object store server-side, without the bytes passing through dr
    parallel_files: int = Field(default=4, ge=1, le=64)  # files copied (and verified) at once
    part_size_mib: int | None = Field(default=None, ge=5, le=5120)  # multipart part size in MiB; unset: chosen per file
    max_buffer_mib: int = Field(default=144, ge=16)  # memory that parts in flight may hold, in MiB
    shards: Shards | None = None  # none (default): every copy in this process, unsharded

    @field_validator("run_pattern")
    @classmethod
    def _pattern(cls, pattern: str) -> str:
        try:
            compiled = re.compile(pattern)
        except re.error as exc:
            raise ValueError(f"not a regular expression: {exc}") from None
        if not {"run", "step"} <= set(compiled.groupindex):
            raise ValueError("needs named groups (?P<run>...) and (?P<step>...)")
        return pattern

    @field_validator("abort_multipart_after")
    @classmethod
    def _age(cls, value: str) -> str:
        parse_duration(value)
        return value

    @model_validator(mode="after")
    def _tiers_resolve(self) -> "CheckpointsOptions":
        names = [t.name for t in self.tiers]
        if len(set(names)) != len(names):
            raise ValueError(f"tier names must be unique: {names}")
        if not self.tiers and self.dr_copy is None:
            raise ValueError("set dr_copy (where DR copies go) or tiers with `to`")
        if any(t.to is None for t in self.tiers) and self.dr_copy is None:
            raise ValueError("a tier without `to` copies to dr_copy, which is not set")
        if any(t.milestones_only for t in self.tiers) and self.milestone is None:
            raise ValueError("a milestones_only tier needs the source's `milestone` rule")
        for tier in self.effective_tiers():
            for root in self.roots:
                if _nested(tier.to, root):
                    raise ValueError(f"tier {tier.name!r} copies to {tier.to.url}, which overlaps "
                                     f"the checkpoint root {root.url}: copies would be found as checkpoints")
        return self

    def effective_tiers(self) -> list[Tier]:
        """The tiers with `to` resolved; no tiers means one `near` tier: every checkpoint."""
        tiers = self.tiers or [Tier(name="near")]
        return [t if t.to is not None else t.model_copy(update={"to": self.dr_copy}) for t in tiers]

    @property
    def abort_after_seconds(self) -> float:
        return parse_duration(self.abort_multipart_after).total_seconds()

    @property
    def part_size(self) -> int | None:
        """The fixed part size in bytes, or None: chosen per file."""
        return self.part_size_mib << 20 if self.part_size_mib else None

    def marker_rules(self) -> list[MarkerRule]:
        return [m.rule() for m in self.markers]

    def written_last(self, rel: str) -> bool:
        """Index and marker files are copied (and restored) after the data they describe, so a
        half-copied directory never looks committed to a trainer scanning for checkpoints."""
        name = rel.rsplit("/", 1)[-1]
        if META.match(name) or META_TMP.match(name) or name.endswith(ST_INDEX):
            return True
        return any(fnmatch.fnmatchcase(name, p) for p in [m.pattern for m in self.markers] + ["COMPLETE"])

    def marker_names(self) -> list[str]:
        """Exact marker names (no glob characters): discovery finds `marked` directories by them."""
        return [m.pattern for m in self.markers if not any(c in m.pattern for c in "*?[")] or ["COMPLETE"]


def _nested(a: PlaceSpec | None, b: PlaceSpec) -> bool:
    """Whether one location lies inside the other (same scheme; endpoints are not compared,
    so two buckets of the same name on different servers are refused too: rename one)."""
    if a is None or a.is_s3 != b.is_s3:
        return False
    x, y = a.url.rstrip("/") + "/", b.url.rstrip("/") + "/"
    return x.startswith(y) or y.startswith(x)
