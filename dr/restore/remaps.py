"""The plan's remaps (restore.remaps): what each one rewrites, and how a reference is rewritten.

Where it sits: the restore planner asks two questions of a remap. Judging: "after the restore
rewrites this dependency, where does it point?" (the step is judged on the new reference).
Executing: "what does the exporter need to hear?" (dr.restore.destinations turns remaps into
RestoreRequest.remap keys and destinations). A remap only counts for a dependency when the
restore really applies it, so each remap kind lists the dependency kinds it rewrites and the
exporters that rewrite them.
"""

from __future__ import annotations

from dataclasses import dataclass

from dr.model.plans import RemapSpec
from dr.model.recovery import normalize

# remap kind -> (dependency kinds it rewrites, exporter types that apply it)
APPLIES: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    # the kubernetes exporter rewrites the registry of every image in every pod template
    "registry": (frozenset({"image"}), frozenset({"kubernetes"})),
    # the kubernetes exporter moves objects (and ServiceAccount subjects) to the new namespace
    "namespace": (frozenset({"secret", "configmap", "secret-store", "webhook-service"}),
                  frozenset({"kubernetes"})),
    # the kubernetes exporter rewrites every storageClassName
    "storage-class": (frozenset({"storage-class"}), frozenset({"kubernetes"})),
    # the git step pushes to the new remote (its destination)
    "git-remote": (frozenset({"git-remote"}), frozenset({"git"})),
    # the checkpoints step writes the checkpoint under the new bucket (its destination)
    "bucket": (frozenset({"bucket", "path"}), frozenset({"checkpoints"})),
}


@dataclass(frozen=True)
class Rewrite:
    remap: RemapSpec
    old: str
    new: str

    def describe(self) -> str:
        why = f" ({self.remap.reason})" if self.remap.reason else ""
        return f"plan remap {self.remap.kind}: {self.old} -> {self.new}{why}"


def _prefix(reference: str, old: str, new: str) -> str | None:
    """`old` itself, or `old` followed by '/': the leading part is replaced."""
    base = old.rstrip("/")
    if reference == old or reference == base:
        return new
    if reference.startswith(base + "/"):
        return new.rstrip("/") + reference[len(base):]
    return None


def _git_remote(reference: str, old: str, new: str) -> str | None:
    if normalize(reference) == normalize(old):
        return new
    return _prefix(reference, old, new)


def _namespaced(reference: str, old: str, new: str) -> str | None:
    """`secret:<ns>/<name>` style references, and Service DNS names `<svc>.<ns>.svc...`."""
    kind, sep, rest = reference.partition(":")
    if sep and "/" in rest and not rest.startswith("//"):
        namespace, name = rest.split("/", 1)
        return f"{kind}:{new}/{name}" if namespace == old else None
    parts = reference.split(".")
    if len(parts) > 2 and parts[2] == "svc" and parts[1] == old:
        return ".".join([parts[0], new, *parts[2:]])
    return None


def _storage_class(reference: str, old: str, new: str) -> str | None:
    return f"storageclass:{new}" if reference in (f"storageclass:{old}", old) else None


_REWRITERS = {"registry": _prefix, "bucket": _prefix, "git-remote": _git_remote,
              "namespace": _namespaced, "storage-class": _storage_class}


def applies_to(remap: RemapSpec, source: str, exporter: str) -> bool:
    return (not remap.sources or source in remap.sources) and exporter in APPLIES[remap.kind][1]


def rewrite(remaps: list[RemapSpec], source: str, exporter: str, kind: str, reference: str) -> Rewrite | None:
    """The first remap of the plan (in its order) that the restore applies to this dependency."""
    for remap in remaps:
        if kind not in APPLIES[remap.kind][0] or not applies_to(remap, source, exporter):
            continue
        new = _REWRITERS[remap.kind](reference, remap.old, remap.new)
        if new is not None and new != reference:
            return Rewrite(remap, reference, new)
    return None


def unknown_sources(remaps: list[RemapSpec], sources: list[str]) -> list[str]:
    """Problems: remaps scoped to sources the plan does not have."""
    return [f"restore.remaps[{i}].sources names '{name}', which is not a source of the plan"
            for i, remap in enumerate(remaps) for name in remap.sources if name not in sources]
