"""Remapping objects for a different cluster: RestoreRequest.remap, keys with a prefix.

  namespace:<old>      -> <new>   the object's namespace; a Namespace's own name and its
                                  kubernetes.io/metadata.name label; the namespace of
                                  ServiceAccount subjects in (Cluster)RoleBindings; selectors on
                                  that label, Service DNS names in containers' env, args and
                                  command and in Certificates (namespacing.py, which also notes
                                  the places it leaves alone)
  storage-class:<old>  -> <new>   every storageClassName field (claims, volumeClaimTemplates,
                                  ephemeral volumes) and a StorageClass's own name
  image-registry:<old> -> <new>   the registry (or any leading part) of every container image
                                  in any pod template: `<old>/x:1` becomes `<new>/x:1`
                                  (`busybox` counts as docker.io/library/busybox)
The same remap applied to the same backup gives the same objects, so a second restore with it
finds everything unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from dr.exporters.kubernetes.namespacing import NAME_LABEL, NamespaceMap
from dr.exporters.kubernetes.resources import ResourceType
from dr.exporters.kubernetes.scanning import containers, pod_specs, walk
from dr.model.locations import canonical_image

PREFIXES = ("namespace:", "storage-class:", "image-registry:")


class RemapError(ValueError):
    pass


@dataclass
class Remap:
    namespaces: dict[str, str] = field(default_factory=dict)
    storage_classes: dict[str, str] = field(default_factory=dict)
    registries: dict[str, str] = field(default_factory=dict)

    @classmethod
    def parse(cls, remap: dict[str, str]) -> "Remap":
        out = cls()
        targets = {"namespace:": out.namespaces, "storage-class:": out.storage_classes,
                   "image-registry:": out.registries}
        for key, value in (remap or {}).items():
            prefix = next((p for p in PREFIXES if key.startswith(p)), None)
            if prefix is None or not key[len(prefix):] or not value:
                raise RemapError(f"remap {key!r}={value!r}: keys are {', '.join(p + '<old>' for p in PREFIXES)} "
                                 "with a non-empty new value")
            targets[prefix][key[len(prefix):]] = value
        return out

    def namespace(self, namespace: str | None) -> str | None:
        return self.namespaces.get(namespace, namespace) if namespace else namespace

    def apply(self, rtype: ResourceType, obj: dict, notes: list[str] | None = None) -> dict:
        """Rewrite `obj` in place (see the module docstring) and return it; `notes` receives
        what the namespace map could not rewrite safely (a list per object)."""
        meta = obj.setdefault("metadata", {})
        if self.namespaces:
            self._namespaces(rtype, obj, meta)
            NamespaceMap(self.namespaces).apply(obj, rtype.kind, notes if notes is not None else [])
        if self.storage_classes:
            self._storage_classes(rtype, obj, meta)
        if self.registries:
            self._registries(obj)
        return obj

    def _namespaces(self, rtype: ResourceType, obj: dict, meta: dict) -> None:
        if meta.get("namespace"):
            meta["namespace"] = self.namespace(meta["namespace"])
        if rtype.key == ("", "namespaces") and meta.get("name") in self.namespaces:
            meta["name"] = self.namespaces[meta["name"]]
            if NAME_LABEL in (meta.get("labels") or {}):
                meta["labels"][NAME_LABEL] = meta["name"]
        if rtype.group == "rbac.authorization.k8s.io" and rtype.plural.endswith("bindings"):
            for subject in obj.get("subjects") or []:
                if subject.get("kind") == "ServiceAccount" and subject.get("namespace"):
                    subject["namespace"] = self.namespace(subject["namespace"])

    def _storage_classes(self, rtype: ResourceType, obj: dict, meta: dict) -> None:
        if rtype.key == ("storage.k8s.io", "storageclasses") and meta.get("name") in self.storage_classes:
            meta["name"] = self.storage_classes[meta["name"]]
        for _, node in walk(obj):
            name = node.get("storageClassName")
            if isinstance(name, str) and name in self.storage_classes:
                node["storageClassName"] = self.storage_classes[name]

    def _registries(self, obj: dict) -> None:
        for _, spec in list(pod_specs(obj)):
            for _, container in containers(spec):
                container["image"] = self.image(str(container["image"]))

    def image(self, ref: str) -> str:
        """`ref` under the longest matching old registry; a Docker Hub short name (`busybox`)
        matches as what it stands for (docker.io/library/busybox), as the scan records it."""
        for candidate in dict.fromkeys((ref, canonical_image(ref))):
            for old, new in sorted(self.registries.items(), key=lambda kv: -len(kv[0])):
                if candidate == old or candidate.startswith(old.rstrip("/") + "/"):
                    return new.rstrip("/") + candidate[len(old.rstrip("/")):]
        return ref
