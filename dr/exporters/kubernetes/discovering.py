"""Which resource types the cluster serves: every kind once, at the best version that serves it.

Uses the dynamic client's discoverer for the group list (with each group's preferredVersion and
every other version it serves), then reads the resources of each version itself, the preferred one first and
the rest in Kubernetes' own order (GA, then beta, then alpha; higher numbers first). A kind is
kept at the first version that serves it, so a kind served only in a version that is not its
group's preferred one is backed up too (KServe's `serving.kserve.io` prefers v1beta1, which
serves only InferenceService; ServingRuntime and InferenceGraph are v1alpha1, External Secrets'
PushSecret is v1alpha1 beside the preferred v1), as Velero's discovery does. Subresources
(`pods/log`) and types that cannot be listed or created are left out: they cannot be backed up
and restored as objects. A group version whose discovery the server refuses (an aggregated API
whose backend is down answers 503) is named in `failures` with the server's reason, for the
backup to record as a finding, instead of failing the whole backup.
"""

from __future__ import annotations

import re

from dr.exporters.kubernetes.requesting import Api, KubeError
from dr.exporters.kubernetes.resources import ResourceType

NEEDED_VERBS = {"list", "get", "create"}
_VERSION = re.compile(r"v(\d+)(?:(alpha|beta)(\d+))?")


def version_priority(version: str) -> tuple:
    """Kubernetes' version order (higher sorts first with reverse=True): GA > beta > alpha, then numbers."""
    match = _VERSION.fullmatch(version)
    if not match:
        return (0, 0, 0, 0, version)
    rank = {None: 3, "beta": 2, "alpha": 1}[match.group(2)]
    return (1, rank, int(match.group(1)), int(match.group(3) or 0), "")


def served_types(api: Api, failures: dict[str, str] | None = None) -> list[ResourceType]:
    """Every listable, creatable type once, sorted by (group, plural).

    failures: when given, `group/version` -> the error of each group version whose resources
    could not be discovered (their types are then missing from the answer); else that error raises."""
    discoverer = api.dynamic.resources
    groups = api.call(lambda: discoverer.parse_api_groups(request_resources=False, update=True),
                      what="discovery of API groups")
    found: dict[tuple[str, str], ResourceType] = {}
    for prefix, by_group in groups.items():
        for group, versions in by_group.items():
            if prefix == "apis" and group == "":
                continue  # the discoverer's own placeholder for List
            for version in _in_order(versions):
                for rtype in _discovered(api, prefix, group, version, failures):
                    found.setdefault(rtype.key, rtype)  # an earlier (better) version wins
    return [found[key] for key in sorted(found)]


def _in_order(versions: dict) -> list[str]:
    """The preferred version first, then the others, best first."""
    preferred = [v for v, resource_group in versions.items() if resource_group.preferred]
    others = sorted((v for v in versions if v not in preferred), key=version_priority, reverse=True)
    return preferred + others


def _discovered(api: Api, prefix: str, group: str, version: str,
                failures: dict[str, str] | None) -> list[ResourceType]:
    if failures is None:
        return _types_of(api, prefix, group, version)
    try:
        return _types_of(api, prefix, group, version)
    except KubeError as exc:
        if exc.status == 0:  # no answer at all: the server is gone, not one API
            raise
        failures[f"{group or 'core'}/{version}"] = str(exc)
        return []


def _types_of(api: Api, prefix: str, group: str, version: str) -> list[ResourceType]:
    """Read with dr's own request, not the discoverer's: the discoverer answers an unavailable
    group version (503) with no resources at all, a smaller backup in silence."""
    path = "/" + "/".join(filter(None, [prefix, group, version]))
    listing = api.get(path, what=f"discovery of {group or 'core'}/{version}") or {}
    return [rtype for resource in listing.get("resources") or []
            if (rtype := _usable(resource, group, version)) is not None]


def _usable(resource: dict, group: str, version: str) -> ResourceType | None:
    name = resource.get("name") or ""
    if not name or "/" in name or not NEEDED_VERBS <= set(resource.get("verbs") or ()):
        return None
    return ResourceType(group, version, name, resource.get("kind", ""), bool(resource.get("namespaced")))


def served_plurals(api: Api, group: str, version: str) -> set[str]:
    """The plurals discovery lists for one group version now (empty when it is not served)."""
    path = f"/apis/{group}/{version}" if group else f"/api/{version}"
    try:
        listing = api.get(path, what=f"discovery {path}")
    except KubeError as exc:
        if exc.status in (404, 503):
            return set()
        raise
    return {r["name"] for r in (listing or {}).get("resources", []) if "/" not in r["name"]}
