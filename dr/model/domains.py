"""Failure domains: the nested things that can be lost together.

provider > account > region > zone > cluster, any subset. Losing a domain loses everything
nested inside it, so "is X lost when D fails" is an ancestry question.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Iterator

DOMAIN_KINDS = ("provider", "account", "region", "zone", "cluster", "site", "host")


@dataclass
class FailureDomain:
    name: str
    kind: str
    parent: str | None = None
    description: str = ""


@dataclass
class DomainTree:
    """All failure domains of a plan, by name."""

    domains: dict[str, FailureDomain] = field(default_factory=dict)

    def add(self, domain: FailureDomain) -> None:
        self.domains[domain.name] = domain

    def __contains__(self, name: object) -> bool:
        return name in self.domains

    def __iter__(self) -> Iterator[FailureDomain]:
        return iter(self.domains.values())

    def ancestors(self, name: str) -> list[str]:
        """The domain itself, then its parent, up to the root."""
        chain: list[str] = []
        current: str | None = name
        while current is not None and current in self.domains and current not in chain:
            chain.append(current)
            current = self.domains[current].parent
        return chain

    def is_lost(self, name: str | None, failed: Iterable[str]) -> bool:
        """Whether a thing placed in domain `name` is lost when all of `failed` fail."""
        if name is None:
            return False
        failed_set = set(failed)
        return any(a in failed_set for a in self.ancestors(name))

    def path(self, name: str) -> str:
        """Human-readable nesting, e.g. aws/prod-account/eu-west-1/train-cluster."""
        return "/".join(reversed(self.ancestors(name)))
