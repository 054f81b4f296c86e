"""The audit's scenarios: which failure domains it fails, alone or together.

Without explicit domains the audit runs one scenario per domain in the plan's
protects_against, each failing alone. Domains named explicitly (dr audit --failed A --failed B)
make one scenario in which all of them fail at once: what an incident looks like. What a
scenario loses, and the error for a domain the plan does not have, are the verdict engine's
(dr.model.recovery.scenarios).
"""

from __future__ import annotations

from dr.model.plans import Plan
from dr.model.recovery import Scenario, location_kinds, scenario

# the losses the seed's drill matrix names besides whole domains: the registry and the secret store
LOSS_KINDS = ("registry", "secret-store")


def scenarios_for(plan: Plan, failed: list[str] | None = None) -> list[Scenario]:
    """One scenario per protected domain, or one scenario where every named domain fails."""
    if failed:
        return [scenario(plan.domains, failed, plan.placer.locations, plan.spec.protects_against)]
    return [scenario(plan.domains, [name]) for name in dict.fromkeys(plan.spec.protects_against)]


def location_scenarios(plan: Plan, kinds: tuple[str, ...] = LOSS_KINDS) -> list[Scenario]:
    """A scenario per location kind (registry, secret-store) that some location in a protected
    domain has: those locations fail alone, their domains stay up (the drill matrix adds them)."""
    protected = list(dict.fromkeys(plan.spec.protects_against))
    return [scenario(plan.domains, [name], plan.placer.locations, protected)
            for name in location_kinds(plan.placer.locations, plan.domains, protected, kinds)]
