"""Service names, judged by what lies behind them: one rule for the audit and restore planning.

A Service's DNS name (`db.ml.svc`) resolves in whatever cluster the pod runs in. When the
snapshot holds the Service, the kubernetes exporter records a fact beside it (servicestate.py):
`service-state` when a backend mounts a PersistentVolumeClaim, `service-stateless` otherwise,
each with the reference of the Service's name and a detail naming the backends or the claim.
The facts are not needs of their own; they qualify the snapshot's copy of that Service. The
snapshot restores the Service and its workloads, never their volume data, so with state behind
it the copy does not bring the Service back (blocker); with stateless backends it does, and the
verdict says why (docs/audit-json.md, "Service names").

A Service named inside a URL or connection string (`postgresql://app@db.ml.svc:5432/x`,
`http://mlflow.ml.svc.cluster.local:5000/api`, `grpc://...`) is the same dependency: its host
resolves to the Service, so the URL is judged as the Service's name (judged_as), placement,
copy and facts alike. A host `<svc>.<ns>` without `.svc` resolves the same way from a pod's
search path, but is just as well an outside domain (`.ml` is a country's): it counts only when
the snapshot holds that Service. A URL the snapshot brings back itself (an in-cluster git
server's bundle provides its remote), or that only the plan places, keeps its own judgement.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Callable, Iterable, Mapping

from dr.model.locations import host_of
from dr.model.recovery.copies import normalize
from dr.model.recovery.verdicts import BLOCKED, REMAPPED

SERVICE_STATE, SERVICE_STATELESS = "service-state", "service-stateless"
FACT_KINDS = frozenset({SERVICE_STATE, SERVICE_STATELESS})
# A Service's DNS name, <svc>.<ns>.svc[.<cluster domain>] (groups: svc, ns); the kubernetes
# exporter searches strings for it with the same pattern.
SERVICE_DNS = r"([a-z0-9](?:[-a-z0-9]*[a-z0-9])?)\.([a-z0-9](?:[-a-z0-9]*[a-z0-9])?)\.svc(?:\.[a-z0-9-]+)*"
_SERVICE_HOST = re.compile(SERVICE_DNS)
_SHORT_HOST = re.compile(r"[a-z0-9](?:[-a-z0-9]*[a-z0-9])?\.[a-z0-9](?:[-a-z0-9]*[a-z0-9])?")


def service_dns(match: re.Match) -> str:
    """The name a backed-up Service provides, `<svc>.<ns>.svc.cluster.local`, for a SERVICE_DNS match."""
    return f"{match.group(1)}.{match.group(2)}.svc.cluster.local"


def service_in_url(reference: str, known: Callable[[str], bool]) -> str | None:
    """The Service a URL's host names (`<svc>.<ns>.svc...` always, `<svc>.<ns>` when known()
    holds its name), as service_dns writes it; None for any other reference."""
    if "://" not in reference:
        return None
    try:
        host = host_of(reference)
    except ValueError:  # a malformed port or bracket: not a URL after all
        return None
    match = _SERVICE_HOST.fullmatch(host)
    if match:
        return service_dns(match)
    if _SHORT_HOST.fullmatch(host) and known(name := f"{host}.svc.cluster.local"):
        return name
    return None


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
