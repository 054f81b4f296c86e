"""Snapshots: one backup run, as its manifest records it (docs/format.md, "Snapshot manifest")."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Iterable

GOOD, FAILED = "good", "failed"  # a source result's `outcome` (docs/format.md section 9)


@dataclass
class SourceResult:
    """What one source contributed to a snapshot: its artifacts, or why it failed.

    `outcome` is what the manifest records; "" until then, when the run is judged by its
    result (an error, or an error-level finding: the exporter could not capture what it should).
    """

    name: str
    exporter: str
    artifacts: int = 0
    bytes: int = 0
    error: str = ""
    findings: list[dict[str, Any]] = field(default_factory=list)
    outcome: str = ""

    @property
    def ok(self) -> bool:
        """The exporter ran to its end (no `error`); it may still have failed to capture (see good)."""
        return not self.error

    @property
    def good(self) -> bool:
        """The run counts as a backup of the source: RPO, retention and `latest` measure from it."""
        return (self.outcome or self._judged()) == GOOD

    @property
    def holds(self) -> bool:
        """Its artifacts can be restored: a good run, or a failed one that still captured some."""
        return self.ok and (self.good or self.artifacts > 0)

    def _judged(self) -> str:
        errors = any(f.get("severity") == "error" for f in self.findings)
        return FAILED if self.error or errors else GOOD

    def failure(self) -> str:
        """Why the run failed, in one line: its error, else its first error-level finding."""
        if self.error:
            return self.error
        first = next((f for f in self.findings if f.get("severity") == "error"), None)
        return f"{first.get('code')}: {first.get('message')}" if first else "recorded as failed"

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"name": self.name, "exporter": self.exporter,
                                "artifacts": self.artifacts, "bytes": self.bytes,
                                "outcome": GOOD if self.good else FAILED}
        if self.error:
            data["error"] = self.error
        if self.findings:
            data["findings"] = self.findings
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "SourceResult":
        result = cls(data["name"], data["exporter"], int(data.get("artifacts", 0)),
                     int(data.get("bytes", 0)), data.get("error", ""), list(data.get("findings", [])))
        result.outcome = _recorded_outcome(data.get("outcome"), result)
        return result


def _recorded_outcome(recorded: Any, result: SourceResult) -> str:
    """A manifest's outcome; one written before `outcome` existed is failed when it has an error,
    or an error-level finding and no artifacts (docs/format.md section 9). Unknown values: failed."""
    if recorded is None:
        legacy = result.error or (result.artifacts == 0 and result._judged() == FAILED)
        return FAILED if legacy else GOOD
    return GOOD if recorded == GOOD else FAILED


@dataclass
class Snapshot:
    """A snapshot manifest. `id` is the sha256 of the manifest's stored bytes (not inside it)."""

    plan: str
    time: datetime
    hostname: str
    catalog: str  # digest of the catalog blob
    catalog_entries: int
    sources: list[SourceResult]
    stats: dict[str, Any] = field(default_factory=dict)
    tags: list[str] = field(default_factory=list)
    id: str = ""

    @property
    def short_id(self) -> str:
        return self.id[:8]

    def source_names(self) -> list[str]:
        """The sources it holds: whose artifacts a restore can read (SourceResult.holds)."""
        return [s.name for s in self.sources if s.holds]

    def good_source_names(self) -> list[str]:
        """The sources it is a good backup of: what RPO, retention and `latest` count."""
        return [s.name for s in self.sources if s.good]

    def result_of(self, source: str) -> SourceResult | None:
        return next((s for s in self.sources if s.name == source), None)

    @property
    def held_bytes(self) -> int:
        """The size of what the snapshot holds: its sources that succeeded. (stats.bytes_read
        also counts what failed sources read before failing, which the snapshot does not hold.)"""
        return sum(s.bytes for s in self.sources if s.ok)

    def to_json(self) -> dict[str, Any]:
        return {
            "plan": self.plan,
            "time": self.time.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
            "hostname": self.hostname,
            "catalog": {"blob": self.catalog, "entries": self.catalog_entries},
            "sources": [s.to_json() for s in self.sources],
            "stats": self.stats,
            "tags": self.tags,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any], snapshot_id: str) -> "Snapshot":
        time = datetime.strptime(data["time"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=timezone.utc)
        return cls(
            plan=data["plan"],
            time=time,
            hostname=data.get("hostname", ""),
            catalog=data["catalog"]["blob"],
            catalog_entries=int(data["catalog"]["entries"]),
            sources=[SourceResult.from_json(s) for s in data.get("sources", [])],
            stats=dict(data.get("stats", {})),
            tags=list(data.get("tags", [])),
            id=snapshot_id,
        )


def newest_good(snapshots: Iterable[Snapshot], source: str) -> Snapshot | None:
    """The newest snapshot that is a good backup of `source` (None: there is none)."""
    good = [s for s in snapshots if source in s.good_source_names()]
    return max(good, key=lambda s: s.time) if good else None


def failed_since(snapshots: Iterable[Snapshot], source: str, since: Snapshot | None) -> list[SourceResult]:
    """The failed runs of `source` newer than `since` (all of them without one), oldest first."""
    runs = sorted((s for s in snapshots if since is None or s.time > since.time), key=lambda s: s.time)
    results = [s.result_of(source) for s in runs]
    return [r for r in results if r is not None and not r.good]


def failed_runs(count: int, reason: str, since_good: bool) -> str:
    """"; the 4 runs since failed: <the newest one's reason>" (empty when none did)."""
    if not count:
        return ""
    runs = "run" if count == 1 else f"{count} runs"
    return f"; {'the' if since_good else 'its'} {runs}{' since' if since_good else ''} failed: {reason}"
