"""The drill matrix: one drill per scenario the plan protects against, one after another.

Where it sits: `dr drill --matrix` calls run_matrix(), which runs dr.drills.drilling.run_drill
for each scenario of the plan's protects_against (each domain failing alone, as `dr audit`
judges them), in that order, then one per kind of location the seed's matrix names besides
domains, where the plan has such locations in a protected domain: registry loss (`kind:registry`:
the platform's registries fail, their clusters stay up) and secret-store loss
(`kind:secret-store`), each into its own scratch folder (`<scratch>/<scenario>`, so no
drill restores over another's); SOURCE=DEST destinations (a scratch cluster) are given to
every drill. Every drill writes its own record to the history, tagged with the matrix's id and
scenarios (`matrix`), so `dr drill --history --matrix` can show each matrix run as one table.
A drill that fails does not stop the others: the matrix records what each scenario did.
"""

from __future__ import annotations

import os
import re
import secrets
from datetime import datetime, timezone
from typing import Any, Callable

from dr.audit import location_scenarios, scenarios_for
from dr.drills.drilling import run_drill
from dr.model.plans import Plan
from dr.model.recovery import Scenario

PHASES = ("audit", "plan", "restore", "verify")


def matrix_id() -> str:
    return f"{datetime.now(timezone.utc):%Y%m%dT%H%M%SZ}-{secrets.token_hex(4)}"


def _folder(scratch: str | None, scenario: Scenario) -> str | None:
    return os.path.join(scratch, re.sub(r"[^A-Za-z0-9._-]", "_", scenario.name)) if scratch else None


def run_matrix(plan: Plan, registry, *, scratch: str | None, destinations: dict[str, str],
               on_drill: Callable[[Scenario], None] = lambda s: None, **drill: Any) -> dict[str, Any]:
    """Run every scenario's drill; return {id, scenarios, drills (their records)}."""
    scenarios = scenarios_for(plan) + location_scenarios(plan)
    tag = {"id": matrix_id(), "scenarios": [s.name for s in scenarios]}
    records = []
    for scenario in scenarios:
        on_drill(scenario)
        records.append(run_drill(plan, registry, failed=list(scenario.failed), scratch=_folder(scratch, scenario),
                                 destinations=destinations, matrix=tag, **drill))
    return {**tag, "drills": records, "rows": [row(r) for r in records]}


def row(record: dict[str, Any]) -> dict[str, Any]:
    """One line of the matrix table: a scenario's measured RPO and RTO, total and per phase."""
    steps = record["verify"]["steps"]
    phases = record["rto"]["phases"]
    return {"scenario": "+".join(record["failed"]), "drill": record["id"], "result": record["result"],
            "rpo_seconds": record["rpo_seconds"], "rto_seconds": record["rto"]["total_seconds"],
            "phases": {p: phases.get(p) for p in PHASES},
            "verified": sum(1 for c in steps if c["verified"]), "steps": len(steps),
            "estimated_rto_seconds": record["rto_estimate"].get("total_seconds")}


def matrices(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The history's drills grouped by the matrix they ran in, oldest matrix first."""
    found: dict[str, dict[str, Any]] = {}
    for record in records:
        tag = record.get("matrix")
        if isinstance(tag, dict) and isinstance(tag.get("id"), str):
            entry = found.setdefault(tag["id"], {"id": tag["id"], "scenarios": list(tag.get("scenarios") or []),
                                                 "started": record["started"], "rows": []})
            entry["rows"].append(row(record))
    return sorted(found.values(), key=lambda m: (m["started"], m["id"]))
