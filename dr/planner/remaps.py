"""The plan's remaps (restore.remaps): which ones a step's restore applies, and to what.

Where it sits: the restore planner asks two questions of a remap. Judging: "after the restore
rewrites this dependency, where does it point?" (the step is judged on the new reference).
Executing: "what does the exporter need to hear?" (dr.planner.destinations turns remaps into
RestoreRequest.remap keys and destinations). A remap only counts for a dependency when the
restore really applies it: the step's exporter declares each remap kind it applies, the
dependency kinds it rewrites and how (contract v2, Exporter.remap_kinds). No exporter is named
here.
"""

from __future__ import annotations

from dr.contract import Exporter, Rewrite, Rewriter
from dr.model.plans import RemapSpec


def applies_to(remap: RemapSpec, source: str) -> bool:
    return not remap.sources or source in remap.sources


def rewrite(remaps: list[RemapSpec], source: str, exporter: Exporter | None, kind: str,
            reference: str) -> Rewrite | None:
    """The first remap of the plan (in its order) that this source's restore applies to the dependency."""
    declared = {k.name: k for k in (exporter.remap_kinds if exporter is not None else ())}
    for remap in remaps:
        remap_kind = declared.get(remap.kind)
        if remap_kind is None or kind not in remap_kind.rewrites or not applies_to(remap, source):
            continue
        new = remap_kind.rewrite(reference, remap.old, remap.new)
        if new is not None and new != reference:
            return Rewrite(remap.kind, reference, new, remap.old, remap.new, remap.reason)
    return None


def rewriter(remaps: list[RemapSpec], source: str, exporter: Exporter | None) -> Rewriter:
    """rewrite() bound to one step, as the exporter's destinations() receives it."""
    return lambda kind, reference: rewrite(remaps, source, exporter, kind, reference)


def unknown_sources(remaps: list[RemapSpec], sources: list[str]) -> list[str]:
    """Problems: remaps scoped to sources the plan does not have."""
    return [f"restore.remaps[{i}].sources names '{name}', which is not a source of the plan"
            for i, remap in enumerate(remaps) for name in remap.sources if name not in sources]
