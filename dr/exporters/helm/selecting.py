"""Which charts a backup copies.

- Every chart the plan lists (`charts`).
- With `from_plan`, every `helm-chart-repo` dependency the plan's other sources recorded
  (contract v2, `ExportContext.plan_dependencies`): the kubernetes exporter's Helm releases
  (the chart's repository, from its annotations), Argo CD applications, Flux HelmRepositories.
  A reference naming one chart (`oci://host/path/name:1.2.3`) is that chart. A reference naming
  a repository is expanded: every chart of the repository (its index.yaml, or the OCI
  repositories under the path), every version or the newest (`plan_versions`), at most
  `max_charts_per_repository`. The dependency records the repository but not the chart: the
  whole repository is what covers every release that installed from it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from dr.exporters.helm.references import OCI, BadReference, ChartRef, from_dependency
from dr.exporters.helm.transport import ChartError

if TYPE_CHECKING:
    from dr.exporters.helm.exporter import HelmExporter

DEPENDENCY_KIND = "helm-chart-repo"


@dataclass
class Wanted:
    ref: ChartRef
    why: list[str] = field(default_factory=list)
    provides: list[str] = field(default_factory=list)  # references this chart's copy brings back


@dataclass
class Group:
    """A repository reference other sources recorded, expanded into charts."""

    reference: str
    sources: tuple[str, ...]
    charts: list[ChartRef] = field(default_factory=list)
    left_out: list[str] = field(default_factory=list)  # why it does not cover the whole repository


@dataclass
class Selection:
    wanted: dict[str, Wanted] = field(default_factory=dict)
    groups: list[Group] = field(default_factory=list)
    problems: list[tuple[str, str, dict]] = field(default_factory=list)  # (code, message, facts)

    def add(self, ref: ChartRef, why: str, provides: str | None = None) -> None:
        item = self.wanted.setdefault(ref.identity, Wanted(ref))
        item.why.append(why)
        if provides and provides not in item.provides:
            item.provides.append(provides)


def _version_key(version: str) -> tuple:
    core, _, pre = version.lstrip("v").partition("-")
    numbers = tuple(int(n) if n.isdigit() else -1 for n in re.split(r"[.+]", core)[:3])
    return numbers, pre == "", pre  # a pre-release sorts before its release


def select(exporter: "HelmExporter", from_plan: bool = True) -> Selection:
    selection = Selection()
    for spec in exporter.options.charts:
        ref = spec.ref()
        selection.add(ref, "listed in the plan", ref.identity)
    if from_plan and exporter.options.from_plan:
        for dep in exporter.context.plan_dependencies():
            if dep.kind == DEPENDENCY_KIND:
                _from_dependency(exporter, selection, dep.reference, dep.sources)
    return selection


def _from_dependency(exporter: "HelmExporter", selection: Selection, reference: str, sources: tuple) -> None:
    needed = "needed by " + ", ".join(sources)
    try:
        found = from_dependency(reference)
    except BadReference as exc:
        selection.problems.append(("chart-reference-invalid", f"{reference} ({needed}): {exc}",
                                   {"repository": reference, "sources": list(sources)}))
        return
    if isinstance(found, ChartRef):
        selection.add(found, needed, reference)
        return
    group = Group(found, tuple(sources))
    try:
        charts = _expand(exporter, found)
    except ChartError as exc:
        selection.problems.append(("chart-repository-unavailable",
                                   f"chart repository {found} ({needed}, its Helm releases' charts): {exc}",
                                   {"repository": found, "sources": list(sources)}))
        return
    limit = exporter.options.max_charts_per_repository
    if len(charts) > limit:
        group.left_out.append(f"{len(charts) - limit} of its {len(charts)} chart versions are over "
                              f"max_charts_per_repository ({limit})")
    group.charts = charts[:limit]
    for ref in group.charts:
        selection.add(ref, f"in chart repository {found}, {needed}")
    selection.groups.append(group)


def _expand(exporter: "HelmExporter", repository: str) -> list[ChartRef]:
    """Every chart version (or the newest of each chart) a repository holds, in a stable order."""
    latest = exporter.options.plan_versions == "latest"
    charts: list[ChartRef] = []
    if repository.startswith(OCI):
        host, _, prefix = repository[len(OCI):].partition("/")
        registry = exporter.sources.oci(host)
        for path in registry.catalog():
            parent, _, name = path.rpartition("/")
            if parent != prefix:
                continue
            versions = sorted(registry.tags(path), key=_version_key, reverse=True)
            charts += [ChartRef(repository, name, v) for v in (versions[:1] if latest else versions)]
        return charts
    repo = exporter.sources.http(repository)
    for name in repo.names():
        versions = sorted({e.version for e in repo.entries(name)}, key=_version_key, reverse=True)
        charts += [ChartRef(repository, name, v) for v in (versions[:1] if latest else versions)]
    return charts
