"""The RTO estimate of a restore plan, broken into the parts an incident actually spends time on.

Where it sits: printed by `dr restore --dry-run` and recorded by `dr drill` next to what the
drill measured, so the estimate can be checked against reality over time.

Parts and where each number comes from:
  detection, clean-up, re-queueing, communication-group rebuild, return to steady throughput:
      the plan's restore.rto (nothing in a backup can measure them);
  image warm-up:        image bytes (image artifacts in the snapshot, plus restore.rto.image_bytes)
  data warm-up:         the other artifacts' bytes
  checkpoint download:  the bytes of the checkpoints the restore reads (the newest step of each run)
  propagation:          the longest wait an exporter declares after its restore (contract v2
      restore_wait: DNS TTLs); waits overlap, so the longest counts, not their sum
      each divided by the throughput measured during backups: the sum of bytes moved
      (bytes_read + bytes_transferred, the latter being checkpoint DR copies) over the sum of
      duration_seconds of the newest backups that moved anything (snapshot stats). Only when
      no backup measured one is restore.rto.throughput used.
A part whose figure is missing is reported as unknown, and the total then says "at least".
Only steps that will run count.
"""

from __future__ import annotations

from dr.model.sizes import human_size

from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from dr.model.durations import format_duration
from dr.model.plans import RtoSpec, parse_size
from dr.model.snapshots import Snapshot
from dr.planner.steps import READY, Step

MEASURED_BACKUPS = 10  # the newest backups whose throughput is averaged
# One artifact claiming more than this is a damaged or forged catalog, not a real backup: the
# estimate leaves it out and says so (a finding), rather than estimate centuries or overflow.
ABSURD_BYTES = 1 << 50  # 1 PiB
MAX_SECONDS = 100 * 365 * 86400  # an estimate is clamped here (a timedelta overflows beyond ~2.7 million years)

# (part, label, plan field or None when computed from bytes)
PARTS = [
    ("detection", "detection", "detection"),
    ("cleanup", "clean-up", "cleanup"),
    ("requeue", "re-queueing", "requeue"),
    ("image_warmup", "image warm-up", None),
    ("data_warmup", "data warm-up", None),
    ("checkpoint_download", "checkpoint download", None),
    ("communication_rebuild", "communication-group rebuild", "communication_rebuild"),
    ("propagation", "propagation (cached answers expire)", None),
    ("steady_throughput", "return to steady throughput", "steady_throughput"),
]


@dataclass
class Part:
    name: str
    label: str
    seconds: float | None  # None: unknown
    basis: str  # where the figure comes from

    def to_json(self) -> dict[str, Any]:
        return {"part": self.name, "label": self.label, "seconds": self.seconds, "basis": self.basis}


@dataclass
class RtoEstimate:
    parts: list[Part] = field(default_factory=list)
    throughput: float | None = None  # bytes per second
    throughput_basis: str = ""
    findings: list[str] = field(default_factory=list)  # what made the estimate leave something out

    @property
    def total(self) -> float:
        return sum(p.seconds or 0.0 for p in self.parts)

    @property
    def complete(self) -> bool:
        return all(p.seconds is not None for p in self.parts)

    def describe_total(self) -> str:
        return ("" if self.complete else "at least ") + show(self.total)

    def to_json(self) -> dict[str, Any]:
        return {"total_seconds": round(self.total, 3), "complete": self.complete,
                "throughput_bytes_per_second": self.throughput, "throughput_basis": self.throughput_basis,
                "parts": [p.to_json() for p in self.parts], "findings": list(self.findings)}


def show(seconds: float) -> str:
    if seconds >= MAX_SECONDS:
        return "over " + format_duration(timedelta(seconds=MAX_SECONDS))
    return f"{seconds:.1f}s" if seconds < 60 else format_duration(timedelta(seconds=round(seconds)))


def moved(snapshot: Snapshot) -> int:
    """Bytes a backup moved: read from sources, plus copied by exporters outside the
    repository (checkpoint DR copies), which took part of the same wall time."""
    return int(snapshot.stats.get("bytes_read", 0)) + int(snapshot.stats.get("bytes_transferred", 0))


def measured_throughput(snapshots: list[Snapshot]) -> tuple[float | None, str]:
    """bytes/s over the newest backups that moved something and recorded their duration."""
    usable = [s for s in snapshots if moved(s) > 0 and s.stats.get("duration_seconds", 0) > 0]
    usable = sorted(usable, key=lambda s: s.time)[-MEASURED_BACKUPS:]
    if not usable:
        return None, "no backup recorded bytes moved and duration_seconds"
    total = sum(moved(s) for s in usable)
    seconds = sum(float(s.stats["duration_seconds"]) for s in usable)
    return total / seconds, (f"measured: {human_size(total)} moved in {seconds:.1f}s over the newest "
                             f"{len(usable)} backup{'s' * (len(usable) != 1)}")


BYTE_PARTS = ("image_warmup", "data_warmup", "checkpoint_download")


def byte_parts(steps: list[Step], findings: list[str] | None = None) -> dict[str, int]:
    """Bytes each warm-up part moves, over the steps that will run, as each step's exporter
    counts them (contract v2 restore_bytes; a part it names that is not one of BYTE_PARTS
    counts as data warm-up). Artifacts claiming absurd sizes are left out, each a finding."""
    out = dict.fromkeys(BYTE_PARTS, 0)
    for step in (s for s in steps if s.status == READY):
        plausible = [a for a in step.artifacts if 0 <= a.size <= ABSURD_BYTES]
        if findings is not None:
            findings += _absurd(step, [a for a in step.artifacts if not 0 <= a.size <= ABSURD_BYTES])
        parts = step.instance.restore_bytes(plausible) if step.instance is not None else \
            {"data_warmup": sum(a.size for a in plausible)}
        for part, size in parts.items():
            out[part if part in out else "data_warmup"] += min(max(int(size), 0), ABSURD_BYTES)
    return out


def _absurd(step: Step, artifacts: list) -> list[str]:
    if not artifacts:
        return []
    worst = max(artifacts, key=lambda a: abs(a.size))
    more = f" (and {len(artifacts) - 1} more)" if len(artifacts) > 1 else ""
    return [f"step {step.name}: artifact {worst.identity} claims {worst.size} bytes{more}, beyond any real "
            f"backup ({human_size(ABSURD_BYTES)}): the catalog is damaged or forged; left out of the "
            "estimate, and the restore will refuse content that does not match"]


def estimate(rto: RtoSpec, steps: list[Step], snapshots: list[Snapshot]) -> RtoEstimate:
    throughput, basis = measured_throughput(snapshots)
    if throughput is None and rto.throughput_bytes:
        throughput, basis = rto.throughput_bytes, f"restore.rto.throughput ({rto.throughput}); {basis}"
    result = RtoEstimate(throughput=throughput, throughput_basis=basis)
    sizes = byte_parts(steps, result.findings)
    if rto.image_bytes is not None:
        sizes["image_warmup"] += parse_size(rto.image_bytes)
    for name, label, plan_field in PARTS:
        if plan_field is not None:
            seconds = rto.seconds(plan_field)
            why = f"plan restore.rto.{plan_field}" if seconds is not None else \
                f"unknown: declare restore.rto.{plan_field} in the plan"
            result.parts.append(Part(name, label, seconds, why))
        elif name == "propagation":
            result.parts.append(_propagation(name, label, steps))
        else:
            result.parts.append(_from_bytes(name, label, sizes[name], throughput))
    return result


def _propagation(name: str, label: str, steps: list[Step]) -> Part:
    waits = [w for s in steps if s.status == READY and s.instance is not None
             for w in [s.instance.restore_wait(s.artifacts)] if w is not None]
    if not waits:
        return Part(name, label, 0.0, "no step waits after its restore")
    seconds, why = max(waits, key=lambda w: w[0])
    return Part(name, label, min(float(seconds), float(MAX_SECONDS)), why)


def _from_bytes(name: str, label: str, size: int, throughput: float | None) -> Part:
    if size == 0:
        return Part(name, label, 0.0, "nothing to move")
    if not throughput:
        return Part(name, label, None, f"unknown: {human_size(size)} to move and no measured throughput")
    seconds = min(size / throughput, float(MAX_SECONDS))
    return Part(name, label, seconds, f"{human_size(size)} at {human_size(throughput)}/s")
