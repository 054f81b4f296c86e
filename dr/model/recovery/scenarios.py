"""A failure scenario: the domains that fail together, and every domain lost with them.

A domain fails everything nested in it (DomainTree.is_lost): a region takes its zones and
clusters. The audit makes one scenario per protected domain, or one for the domains named with
--failed; a restore or a drill makes one for its --failed domains (none: nothing has failed).
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Iterable

from dr.model.domains import DomainTree


class UnknownDomain(ValueError):
    """A named domain is not in the plan; the message names the nearest valid one."""

    def __init__(self, name: str, nearest: str | None, known: list[str]):
        self.name, self.nearest = name, nearest
        hint = f"did you mean '{nearest}'? " if nearest else ""
        super().__init__(f"no failure domain '{name}' in the plan; {hint}valid domains: {', '.join(known)}")


@dataclass(frozen=True)
class Scenario:
    failed: tuple[str, ...]
    lost: frozenset[str]  # the failed domains and everything nested in them
    label: str  # for people, e.g. "eu-west-1 (region) fails"

    @property
    def name(self) -> str:
        return "+".join(self.failed)

    def loses(self, domain: str | None) -> bool:
        return is_lost(domain, self.lost)


def scenario(tree: DomainTree, failed: Iterable[str]) -> Scenario:
    """The scenario in which all of `failed` fail at once (raises UnknownDomain)."""
    failed = tuple(dict.fromkeys(failed))
    return Scenario(failed, lost_domains(tree, failed), _label(tree, failed))


def lost_domains(tree: DomainTree, failed: Iterable[str]) -> frozenset[str]:
    """Every domain lost when all of `failed` fail at once (a region takes its clusters)."""
    failed = tuple(dict.fromkeys(failed))
    for name in failed:
        if name not in tree:
            known = sorted(d.name for d in tree)
            close = difflib.get_close_matches(name, known, n=1, cutoff=0.0)
            raise UnknownDomain(name, close[0] if close else None, known)
    return frozenset(d.name for d in tree if tree.is_lost(d.name, failed))


def is_lost(domain: str | None, lost: frozenset[str]) -> bool:
    return domain is not None and domain in lost


def _label(tree: DomainTree, failed: tuple[str, ...]) -> str:
    if not failed:
        return "nothing has failed"
    parts = [f"{n} ({tree.domains[n].kind})" for n in failed]
    return parts[0] + " fails" if len(parts) == 1 else ", ".join(parts[:-1]) + f" and {parts[-1]} fail"
