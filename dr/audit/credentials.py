"""Credentials and keys that only the snapshot holds: the circular dependency, as findings.

What is circular is the verdict engine's judgement (dr.model.recovery.circular: a declared
credentials_location or key_location placed nowhere that the snapshot itself provides, or the
Secrets dr's own workload reads when the plan declares no credentials_location); a restore plan
judges its needs by the same one. Each is a `credentials-circular` blocker in every scenario
(scenario None), and replaces the unknown-location finding the same essential would otherwise
get (one problem, counted once).
"""

from __future__ import annotations

from dr.audit.findings import BLOCKER, Finding
from dr.audit.gathering import DependencyIndex
from dr.model.recovery import Essential
from dr.model.recovery.circular import EXAMPLES, Circular, circular


def circular_findings(items: list[Essential], audited: str,
                      index: DependencyIndex) -> tuple[list[Finding], list[Essential]]:
    """The findings, and the essentials they replace (left out of unknown_findings)."""
    found = circular(items, audited, index.providers, index.dr_workloads)
    return [_finding(c) for c in found], [c.item for c in found]


def _finding(found: Circular) -> Finding:
    item = found.item
    if found.copy is not None:
        return Finding("credentials-circular", BLOCKER, found.message, kind=item.role, reference=item.reference,
                       artifact=found.copy.artifact, examples=[found.copy.artifact], sources=[found.copy.source])
    action = (f"Keep a copy of target {item.owner}'s credentials outside every protected domain (another "
              "account's secret store, break-glass escrow), set targets[].credentials_location to it and "
              "place it with a location; the Secret in the cluster stays for the backup job.")
    return Finding("credentials-circular", BLOCKER, found.message, kind=item.role, reference=found.reference,
                   artifact=found.readers[0], examples=list(found.readers[:EXAMPLES]), action=action)
