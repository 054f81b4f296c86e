"""Scenarios: which failure domains are gone, and so which domains are lost with them.

Without explicit domains the audit runs one scenario per domain in the plan's
protects_against, each failing alone. Domains named explicitly (dr audit --failed A --failed B)
make one scenario in which all of them fail at once: what an incident looks like. A domain
fails everything nested in it (DomainTree.is_lost): a region takes its zones and clusters.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass

from dr.model.plans import Plan


class UnknownDomain(ValueError):
    """A named domain is not in the plan; the message names the nearest valid one."""

    def __init__(self, name: str, nearest: str | None, known: list[str]):
        self.name = name
        self.nearest = nearest
        hint = f"did you mean '{nearest}'? " if nearest else ""
        super().__init__(f"no failure domain '{name}' in the plan; {hint}"
                         f"valid domains: {', '.join(known)}")


@dataclass(frozen=True)
class Scenario:
    failed: tuple[str, ...]
    lost: frozenset[str]  # the failed domains and everything nested in them
    label: str  # e.g. "eu-west-1 (region) fails"

    @property
    def name(self) -> str:
        return "+".join(self.failed)

    def loses(self, domain: str | None) -> bool:
        return domain is not None and domain in self.lost


def nearest_domain(plan: Plan, name: str) -> str | None:
    known = [d.name for d in plan.domains]
    close = difflib.get_close_matches(name, known, n=1, cutoff=0.0)
    return close[0] if close else None


def scenario(plan: Plan, failed: list[str]) -> Scenario:
    tree = plan.domains
    for name in failed:
        if name not in tree:
            raise UnknownDomain(name, nearest_domain(plan, name), sorted(d.name for d in tree))
    ordered = tuple(dict.fromkeys(failed))
    lost = frozenset(d.name for d in tree if tree.is_lost(d.name, ordered))
    parts = [f"{n} ({tree.domains[n].kind})" for n in ordered]
    label = (parts[0] + " fails") if len(parts) == 1 else (", ".join(parts[:-1]) + f" and {parts[-1]} fail")
    return Scenario(ordered, lost, label)


def scenarios_for(plan: Plan, failed: list[str] | None = None) -> list[Scenario]:
    """One scenario per protected domain, or one scenario where every named domain fails."""
    if failed:
        return [scenario(plan, failed)]
    return [scenario(plan, [name]) for name in dict.fromkeys(plan.spec.protects_against)]
