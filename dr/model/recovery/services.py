"""Service names, judged by what lies behind them: one rule for the audit and restore planning.

A Service's DNS name (`db.ml.svc`) resolves in whatever cluster the pod runs in. When the
snapshot holds the Service, the kubernetes exporter records a fact beside it (servicestate.py):
`service-state` when a backend mounts a PersistentVolumeClaim, `service-stateless` otherwise,
each with the reference of the Service's name and a detail naming the backends or the claim.
The facts are not needs of their own; they qualify the snapshot's copy of that Service. The
snapshot restores the Service and its workloads, never their volume data, so with state behind
it the copy does not bring the Service back (blocker); with stateless backends it does, and the
verdict says why (docs/audit-json.md, "Service names").
"""

from __future__ import annotations

from dataclasses import replace
from typing import Iterable, Mapping

from dr.model.recovery.copies import normalize
from dr.model.recovery.verdicts import BLOCKED, REMAPPED

SERVICE_STATE, SERVICE_STATELESS = "service-state", "service-stateless"
FACT_KINDS = frozenset({SERVICE_STATE, SERVICE_STATELESS})


def service_facts(dependencies: Iterable[tuple[str, str, str]]) -> dict[str, tuple[str, str]]:
    """normalize(reference) -> (fact kind, what lies behind) from (kind, reference, detail)."""
    return {normalize(ref): (kind, detail) for kind, ref, detail in dependencies if kind in FACT_KINDS}


def behind(judgement, reference: str, facts: Mapping[str, tuple[str, str]]):
    """The judgement of a Service the snapshot restores in place of a lost one, with what lies
    behind it; any other judgement unchanged."""
    fact = facts.get(normalize(reference)) if facts else None
    if judgement.verdict != REMAPPED or fact is None:
        return judgement
    kind, detail = fact
    what = detail.split(": ", 1)[-1]
    if kind == SERVICE_STATELESS:
        return replace(judgement, note=f"recreated by the restore, which holds the Service and its stateless "
                                       f"backends ({what})")
    return replace(judgement, verdict=BLOCKED, copy=None,
                   note=f"the state behind service {reference} ({what}) lives only in the lost cluster: the "
                        f"snapshot restores the Service and its workloads, not the volume data")
