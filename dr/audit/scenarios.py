"""The audit's scenarios: which failure domains it fails, alone or together.

Without explicit domains the audit runs one scenario per domain in the plan's
protects_against, each failing alone. Domains named explicitly (dr audit --failed A --failed B)
make one scenario in which all of them fail at once: what an incident looks like. What a
scenario loses, and the error for a domain the plan does not have, are the verdict engine's
(dr.model.recovery.scenarios).
"""

from __future__ import annotations

from dr.model.plans import Plan
from dr.model.recovery import Scenario, scenario


def scenarios_for(plan: Plan, failed: list[str] | None = None) -> list[Scenario]:
    """One scenario per protected domain, or one scenario where every named domain fails."""
    if failed:
        return [scenario(plan.domains, failed)]
    return [scenario(plan.domains, [name]) for name in dict.fromkeys(plan.spec.protects_against)]
