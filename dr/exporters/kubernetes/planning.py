"""What the kubernetes exporter tells the restore planner (contract v2): its remap kinds and
restore options, and how each rewrites a dependency's reference.

Where it sits: dr.restore judges a step's dependencies after the plan's remaps; the rewrites
below say where a reference points once this exporter's restore has applied a remap
(dr.exporters.kubernetes.remapping applies the same remaps to the objects themselves).
"""

from __future__ import annotations

from dr.contract import RemapKind, RestoreOption, prefix_rewrite


def namespaced_rewrite(reference: str, old: str, new: str) -> str | None:
    """`secret:<ns>/<name>` style references, and Service DNS names `<svc>.<ns>.svc...`."""
    kind, sep, rest = reference.partition(":")
    if sep and "/" in rest and not rest.startswith("//"):
        namespace, name = rest.split("/", 1)
        return f"{kind}:{new}/{name}" if namespace == old else None
    parts = reference.split(".")
    if len(parts) > 2 and parts[2] == "svc" and parts[1] == old:
        return ".".join([parts[0], new, *parts[2:]])
    return None


def storage_class_rewrite(reference: str, old: str, new: str) -> str | None:
    return f"storageclass:{new}" if reference in (f"storageclass:{old}", old) else None


REMAP_KINDS = (
    # the registry of every image in every pod template is rewritten
    RemapKind("registry", frozenset({"image"}), "old: a registry host or repository prefix "
              "(registry.cluster-a.local/team); new: the surviving registry holding the copies",
              request_prefix="image-registry:"),
    # objects (and ServiceAccount subjects) move to the new namespace
    RemapKind("namespace", frozenset({"secret", "configmap", "secret-store", "webhook-service", "service",
                                      "issuer"}),
              "old: a namespace; new: the namespace to restore its objects into",
              request_prefix="namespace:", rewrite=namespaced_rewrite),
    # every storageClassName is rewritten
    RemapKind("storage-class", frozenset({"storage-class"}), "old: a StorageClass name; new: the "
              "StorageClass the recovery cluster has", request_prefix="storage-class:",
              rewrite=storage_class_rewrite),
)
assert REMAP_KINDS[0].rewrite is prefix_rewrite

RESTORE_OPTIONS = (
    RestoreOption("namespace-map", "OLD=NEW", "restore namespace OLD as NEW (repeatable)", "namespace:",
                  pairs=True),
)
