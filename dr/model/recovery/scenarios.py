"""A failure scenario: the domains that fail together, and every domain lost with them.

A domain fails everything nested in it (DomainTree.is_lost): a region takes its zones and
clusters. The audit makes one scenario per protected domain, or one for the domains named with
--failed; a restore or a drill makes one for its --failed domains (none: nothing has failed).

A scenario can also lose locations while their domains stay up: `kind:KIND` fails every
location of that kind (`registry`, `secret-store`, ...) placed in a protected domain (the
platform's registry deleted or its Vault corrupted, the clusters still running), and
`location:NAME` fails one location. A reference placed at a lost location is judged as if its
domain were lost, essentials included (the key or a target's credentials kept in a secret
store that failed). The drill matrix adds a scenario per such kind (registry loss, secret-store
loss).
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Iterable

from dr.model.domains import DomainTree
from dr.model.locations import Location, Placement

KIND, LOCATION = "kind:", "location:"


class UnknownDomain(ValueError):
    """A named domain is not in the plan; the message names the nearest valid one."""

    def __init__(self, name: str, nearest: str | None, known: list[str]):
        self.name, self.nearest = name, nearest
        hint = f"did you mean '{nearest}'? " if nearest else ""
        super().__init__(f"no failure domain '{name}' in the plan; {hint}valid domains: {', '.join(known)} "
                         f"(or {KIND}KIND, {LOCATION}NAME for locations that fail alone)")


class UnknownLoss(UnknownDomain):
    """A `kind:` or `location:` name that matches no location the scenario could lose."""

    def __init__(self, name: str, known: list[str]):
        self.name, self.nearest = name, None
        ValueError.__init__(self, f"'{name}' names no location of the plan that could fail"
                                  f"{' (in a protected domain)' if name.startswith(KIND) else ''}; "
                                  f"valid: {', '.join(known) or 'none: the plan lists no locations'}")


@dataclass(frozen=True)
class Scenario:
    failed: tuple[str, ...]  # as named: domains, kind:KIND, location:NAME
    lost: frozenset[str]  # the failed domains and everything nested in them
    label: str  # for people, e.g. "eu-west-1 (region) fails"
    lost_locations: frozenset[str] = frozenset()  # locations lost while their domains stay up

    @property
    def lost_summary(self) -> str:
        """What is lost, for a report's table: the domains, then the locations lost alone."""
        parts = sorted(self.lost) + [f"location {name}" for name in sorted(self.lost_locations)]
        return ", ".join(parts)

    @property
    def failed_domains(self) -> tuple[str, ...]:
        return tuple(n for n in self.failed if not is_location_loss(n))

    @property
    def name(self) -> str:
        return "+".join(self.failed)

    def loses(self, domain: str | None) -> bool:
        return is_lost(domain, self.lost)


def is_location_loss(name: str) -> bool:
    return name.startswith((KIND, LOCATION))


def placement_lost(placement: Placement, lost: frozenset[str], lost_locations: frozenset[str]) -> bool:
    """Whether a placed reference is lost: its domain is, or the location that placed it is."""
    return lost_at(placement.domain, placement.location, lost, lost_locations)


def lost_at(domain: str | None, location: str | None, lost: frozenset[str], lost_locations: frozenset[str]) -> bool:
    """The one loss rule, for references and essentials alike."""
    return is_lost(domain, lost) or (location is not None and location in lost_locations)


def scenario(tree: DomainTree, failed: Iterable[str], locations: Iterable[Location] = (),
             protected: Iterable[str] = ()) -> Scenario:
    """The scenario in which all of `failed` fail at once (raises UnknownDomain, UnknownLoss).

    locations, protected: the plan's locations and protects_against, for kind:/location: names."""
    failed = tuple(dict.fromkeys(failed))
    locations = list(locations)
    lost_at = lost_locations(tree, [n for n in failed if is_location_loss(n)], locations, list(protected))
    return Scenario(failed, lost_domains(tree, failed), _label(tree, failed, lost_at), lost_at)


def lost_locations(tree: DomainTree, names: list[str], locations: list[Location],
                   protected: list[str]) -> frozenset[str]:
    """The locations named by kind:KIND (those in a protected domain) or location:NAME."""
    in_protected = lost_domains(tree, protected) if protected else frozenset(d.name for d in tree)
    lost: set[str] = set()
    for name in names:
        if name.startswith(LOCATION):
            found = [loc.name for loc in locations if loc.name == name[len(LOCATION):]]
            known = [LOCATION + loc.name for loc in locations]
        else:
            found = [loc.name for loc in locations if loc.kind == name[len(KIND):] and loc.domain in in_protected]
            known = sorted({KIND + loc.kind for loc in locations if loc.kind and loc.domain in in_protected})
        if not found:
            raise UnknownLoss(name, known)
        lost.update(found)
    return frozenset(lost)


def location_kinds(locations: Iterable[Location], tree: DomainTree, protected: list[str],
                   kinds: tuple[str, ...]) -> list[str]:
    """`kind:KIND` for each of `kinds` that some location in a protected domain has."""
    in_protected = lost_domains(tree, protected)
    present = {loc.kind for loc in locations if loc.domain in in_protected}
    return [KIND + kind for kind in kinds if kind in present]


def lost_domains(tree: DomainTree, failed: Iterable[str]) -> frozenset[str]:
    """Every domain lost when all of `failed` fail at once (a region takes its clusters);
    kind:/location: names lose no domain."""
    failed = tuple(n for n in dict.fromkeys(failed) if not is_location_loss(n))
    for name in failed:
        if name not in tree:
            known = sorted(d.name for d in tree)
            close = difflib.get_close_matches(name, known, n=1, cutoff=0.0)
            raise UnknownDomain(name, close[0] if close else None, known)
    return frozenset(d.name for d in tree if tree.is_lost(d.name, failed))


def is_lost(domain: str | None, lost: frozenset[str]) -> bool:
    return domain is not None and domain in lost


def _label(tree: DomainTree, failed: tuple[str, ...], lost_at: frozenset[str]) -> str:
    if not failed:
        return "nothing has failed"
    parts = [f"{n} ({tree.domains[n].kind})" for n in failed if not is_location_loss(n)]
    parts += [f"the {n[len(KIND):]} locations ({', '.join(sorted(lost_at))})" if n.startswith(KIND)
              else f"location {n[len(LOCATION):]}" for n in failed if is_location_loss(n)]
    if len(parts) == 1:
        return parts[0] + (" fail (their domains stay up)" if failed[0].startswith(KIND) else " fails")
    return ", ".join(parts[:-1]) + f" and {parts[-1]} fail"
