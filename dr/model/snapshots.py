"""Snapshots: one backup run, as its manifest records it (docs/format.md, "Snapshot manifest")."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any


@dataclass
class SourceResult:
    """What one source contributed to a snapshot: its artifacts, or why it failed."""

    name: str
    exporter: str
    artifacts: int = 0
    bytes: int = 0
    error: str = ""
    findings: list[dict[str, Any]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.error

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"name": self.name, "exporter": self.exporter,
                                "artifacts": self.artifacts, "bytes": self.bytes}
        if self.error:
            data["error"] = self.error
        if self.findings:
            data["findings"] = self.findings
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "SourceResult":
        return cls(data["name"], data["exporter"], int(data.get("artifacts", 0)),
                   int(data.get("bytes", 0)), data.get("error", ""), list(data.get("findings", [])))


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
        return [s.name for s in self.sources if s.ok]

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
