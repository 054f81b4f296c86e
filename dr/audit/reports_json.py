"""The audit as JSON, for scripts and dashboards. The format is docs/audit-json.md.

Stable: every key is always present (null when it does not apply); keys are only ever added,
with schema_version raised when a consumer would have to change. Layout (not part of the
contract, but kept): indented, sorted keys, one finding per line.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Any

from dr import __version__
from dr.audit.audits import AuditReport, ScenarioResult
from dr.model.redaction import redact

SCHEMA_VERSION = 1


def _time(moment: datetime) -> str:
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _scenario(result: ScenarioResult) -> dict[str, Any]:
    scenario = result.scenario
    return {
        "name": scenario.name,
        "label": scenario.label,
        "failed": list(scenario.failed),
        "lost_domains": sorted(scenario.lost),
        "lost_locations": sorted(scenario.lost_locations),
        "surviving_targets": list(result.essentials.surviving_targets),
        "snapshot_survives": result.essentials.copies_survive,
        "dependencies": dict(result.counts),
    }


def to_document(report: AuditReport) -> dict[str, Any]:
    snap = report.snapshot
    return {
        "schema_version": SCHEMA_VERSION,
        "dr_version": __version__,
        "generated_at": _time(report.generated_at),
        "plan": {"name": report.plan, "path": report.plan_path},
        "strict": report.strict,
        "target": report.target,
        "snapshot": None if snap is None else {
            "id": snap.id, "time": _time(snap.time), "target": snap.target,
            "repository": redact(snap.repository), "artifacts": snap.artifacts,
            "references": snap.references, "distinct_references": snap.distinct_references,
            "sources": list(snap.sources),
        },
        "summary": {"blocked": report.blocked, "blockers": report.blockers,
                    "warnings": report.warnings, "info": report.infos},
        "scenarios": [_scenario(r) for r in report.scenarios],
        "readiness": {"shown": report.readiness.shown, "recorded": report.readiness.total,
                      "codes": dict(report.readiness.recorded)},
        "findings": [f.to_json() for f in report.findings],
    }


def render_json(report: AuditReport) -> str:
    """Indented, keys sorted, and one finding per line: greppable, and fast (json's C encoder
    only runs without indentation, and a large audit has tens of thousands of findings)."""
    document = to_document(report)
    parts = []
    for key in sorted(document):
        if key == "findings":
            rows = ",\n".join("    " + json.dumps(f, sort_keys=True) for f in document[key])
            value = f"[\n{rows}\n  ]" if rows else "[]"
        else:
            value = json.dumps(document[key], indent=2, sort_keys=True).replace("\n", "\n  ")
        parts.append(f"  {json.dumps(key)}: {value}")
    return "{\n" + ",\n".join(parts) + "\n}\n"
