"""The audit's result: what was audited, each scenario's verdicts, and the findings.

Reports (reports_md, reports_json, reports_html) render this object and nothing else.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from dr.audit.essentials import EssentialStates
from dr.audit.findings import BLOCKER, INFO, WARNING, Finding
from dr.audit.dependency_findings import Judged
from dr.model.domains import DomainTree
from dr.model.recovery import Scenario, Verdict


@dataclass
class SnapshotInfo:
    id: str
    time: datetime
    target: str
    repository: str
    artifacts: int
    references: int  # dependency references recorded, repeats included
    distinct_references: int
    sources: list[str]

    @property
    def short_id(self) -> str:
        return self.id[:8]


@dataclass
class ScenarioResult:
    scenario: Scenario
    counts: dict[Verdict, int]  # verdict -> distinct dependencies
    judged: list[Judged]
    essentials: EssentialStates

    @property
    def name(self) -> str:
        return self.scenario.name


@dataclass
class Readiness:
    """The readiness scenario (dr audit --readiness): whether it was listed, and what the
    snapshot records (exporter code -> count) whether listed or not."""

    shown: bool = False
    recorded: dict[str, int] = field(default_factory=dict)

    @property
    def total(self) -> int:
        return sum(self.recorded.values())


@dataclass
class AuditReport:
    plan: str
    plan_path: str
    generated_at: datetime
    strict: bool
    target: str
    snapshot: SnapshotInfo | None
    scenarios: list[ScenarioResult] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    domains: DomainTree = field(default_factory=DomainTree)  # the plan's, for pictures
    readiness: Readiness = field(default_factory=Readiness)

    def count(self, severity: str) -> int:
        return sum(1 for f in self.findings if f.severity == severity)

    @property
    def blockers(self) -> int:
        return self.count(BLOCKER)

    @property
    def warnings(self) -> int:
        return self.count(WARNING)

    @property
    def infos(self) -> int:
        return self.count(INFO)

    @property
    def blocked(self) -> bool:
        return self.blockers > 0

    def findings_for(self, scenario: str | None) -> list[Finding]:
        return [f for f in self.findings if f.scenario == scenario]

    def summary_line(self) -> str:
        verdict = "BLOCKED" if self.blocked else "recoverable"
        snap = f"snapshot {self.snapshot.short_id}" if self.snapshot else "no snapshot"
        return (f"dr audit of plan {self.plan} ({snap} in target {self.target}): {verdict}: "
                f"{self.blockers} blocker(s), {self.warnings} warning(s), {self.infos} remap(s) "
                f"in {len(self.scenarios)} scenario(s)" + self._readiness_part())

    def _readiness_part(self) -> str:
        if self.readiness.shown:
            return f" and the readiness scenario ({self.readiness.total} readiness finding(s))"
        if self.readiness.total:
            return f"; {self.readiness.total} readiness finding(s) not shown (dr audit --readiness lists them)"
        return ""
