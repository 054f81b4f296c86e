"""Resource types and object identities: the nouns every other module of the exporter uses.

A ResourceType is one served resource (a plural in a group, at the version the server
prefers). Artifacts are named after it: `<plural>[.<group>]` for a cluster-scoped type,
`<plural>[.<group>]/<namespace>` for one namespace of a namespaced type.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any


@dataclass(frozen=True)
class ResourceType:
    """Hashable and immutable; the derived names are computed once (they are asked per object)."""

    group: str  # "" for the core group
    version: str
    plural: str
    kind: str
    namespaced: bool

    @cached_property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @cached_property
    def qualified(self) -> str:
        """kubectl's unambiguous name: `configmaps`, `clusterqueues.kueue.x-k8s.io`."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    @cached_property
    def key(self) -> tuple[str, str]:
        """(group, plural): what ordering and selection rules match, whatever the version."""
        return (self.group, self.plural)

    def path(self, namespace: str | None = None, name: str | None = None) -> str:
        """The REST path of the collection (or of one object when `name` is given)."""
        base = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if self.namespaced and namespace:
            base += f"/namespaces/{namespace}"
        base += f"/{self.plural}"
        return f"{base}/{name}" if name else base

    def identity(self, namespace: str | None) -> str:
        return f"{self.qualified}/{namespace}" if self.namespaced and namespace else self.qualified

    def to_meta(self) -> dict[str, Any]:
        return {"group": self.group, "version": self.version, "resource": self.plural,
                "kind": self.kind, "namespaced": self.namespaced}

    @classmethod
    def from_meta(cls, meta: dict[str, Any]) -> "ResourceType":
        return cls(meta["group"], meta["version"], meta["resource"], meta["kind"], bool(meta["namespaced"]))


def object_ref(obj: dict[str, Any]) -> str:
    """`<ns>/<name>` or `<name>`: how findings and dependency details name an object."""
    meta = obj.get("metadata") or {}
    namespace = meta.get("namespace")
    return f"{namespace}/{meta.get('name', '')}" if namespace else str(meta.get("name", ""))


def provides_ref(kind: str, obj: dict[str, Any]) -> str:
    """What restoring `obj` makes available, in the form dependencies use: `secret:<ns>/<name>`."""
    return f"{kind.lower()}:{object_ref(obj)}"


def item_name(rtype: ResourceType, obj: dict[str, Any]) -> str:
    """The restore outcome's item: `configmaps/team-a/settings`, `clusterqueues.kueue.x-k8s.io/cq`."""
    return f"{rtype.qualified}/{object_ref(obj)}"
