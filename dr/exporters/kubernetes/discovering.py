"""Which resource types the cluster serves, each at the version the server prefers.

Uses the dynamic client's discoverer: the group list (with each group's preferredVersion),
then the resources of the preferred version only. Subresources (`pods/log`) and types that
cannot be listed or created are left out: they cannot be backed up and restored as objects.
"""

from __future__ import annotations

from kubernetes.dynamic.resource import ResourceList

from dr.exporters.kubernetes.requesting import Api, KubeError
from dr.exporters.kubernetes.resources import ResourceType

NEEDED_VERBS = {"list", "get", "create"}


def served_types(api: Api) -> list[ResourceType]:
    """Every listable, creatable type at its preferred version, sorted by (group, plural)."""
    discoverer = api.dynamic.resources
    groups = api.call(lambda: discoverer.parse_api_groups(request_resources=False, update=True),
                      what="discovery of API groups")
    found: dict[tuple[str, str], ResourceType] = {}
    for prefix, by_group in groups.items():
        for group, versions in by_group.items():
            if prefix == "apis" and group == "":
                continue  # the discoverer's own placeholder for List
            version = next((v for v, rg in versions.items() if rg.preferred), None)
            if version is None:
                continue
            resources = api.call(lambda p=prefix, g=group, v=version:
                                 discoverer.get_resources_for_api_version(p, g, v, True),
                                 what=f"discovery of {group or 'core'}/{version}")
            for candidates in resources.values():
                for resource in candidates:
                    rtype = _usable(resource)
                    if rtype is not None:
                        found[rtype.key] = rtype
    return [found[key] for key in sorted(found)]


def _usable(resource) -> ResourceType | None:
    if isinstance(resource, ResourceList) or "/" in (resource.name or ""):
        return None
    if not NEEDED_VERBS <= set(resource.verbs or ()):
        return None
    return ResourceType(resource.group or "", resource.api_version, resource.name, resource.kind,
                        bool(resource.namespaced))


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
