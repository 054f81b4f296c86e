"""Which charts a backup copies.

- Every chart the plan lists (`charts`).
- With `from_plan`, the plan's other sources' dependencies (contract v2,
  `ExportContext.plan_dependencies`):
  - `helm-chart`: one chart pinned to its version, `<repository>/<name>:<version>`: what the
    kubernetes exporter records for each Helm release. Exactly that chart is copied, and its
    artifact provides the reference. The dependency's details name the releases.
  - `helm-chart-repo`: a repository without a chart pinned (Argo CD applications, Flux
    HelmRepositories, releases whose chart could not be pinned). One naming a chart
    (`oci://host/path/name:1.2.3`) is that chart. A repository is copied whole only when the
    plan asks (`repositories: all` or `latest`, at most `max_charts_per_repository`): a real
    repository holds thousands of charts. Otherwise it is left out with a warning naming it and
    what needs it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from dr.contract import PlanDependency
from dr.exporters.helm.references import OCI, BadReference, ChartRef, from_dependency, pinned
from dr.exporters.helm.transport import ChartError

if TYPE_CHECKING:
    from dr.exporters.helm.exporter import HelmExporter

DEPENDENCY_KIND = "helm-chart-repo"
CHART_DEPENDENCY_KIND = "helm-chart"
# the detail the kubernetes exporter gives a release's helm-chart dependency (docs/exporters/kubernetes.md)
_RELEASE = re.compile(r"^helm release ([^/\s]+)/(\S+) v(\d+)")


@dataclass
class Wanted:
    ref: ChartRef
    why: list[str] = field(default_factory=list)
    provides: list[str] = field(default_factory=list)  # references this chart's copy brings back
    releases: list[dict] = field(default_factory=list)  # {namespace, name, revision} that run it


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
    problems: list[tuple[str, str, str, dict]] = field(default_factory=list)  # (severity, code, message, facts)

    def add(self, ref: ChartRef, why: str, provides: str | None = None, releases: list[dict] = ()) -> Wanted:
        item = self.wanted.setdefault(ref.identity, Wanted(ref))
        item.why.append(why)
        if provides and provides not in item.provides:
            item.provides.append(provides)
        item.releases += [r for r in releases if r not in item.releases]
        return item


def releases_in(details: tuple[str, ...]) -> list[dict]:
    """The Helm releases a dependency's details name."""
    found = []
    for detail in details:
        match = _RELEASE.match(detail)
        if match:
            found.append({"namespace": match[1], "name": match[2], "revision": int(match[3])})
    return found


def needed_by(dep: PlanDependency) -> str:
    who = ", ".join(dep.details[:3]) + (f" and {len(dep.details) - 3} more" if len(dep.details) > 3 else "")
    return "needed by " + ", ".join(dep.sources) + (f" ({who})" if who else "")


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
            if dep.kind == CHART_DEPENDENCY_KIND:
                _pinned(selection, dep)
            elif dep.kind == DEPENDENCY_KIND:
                _from_dependency(exporter, selection, dep)
    return selection


def _facts(dep: PlanDependency, **more) -> dict:
    return {**more, "sources": list(dep.sources), "needed_by": list(dep.details)}


def _pinned(selection: Selection, dep: PlanDependency) -> None:
    try:
        ref = pinned(dep.reference)
    except BadReference as exc:
        selection.problems.append(("error", "chart-reference-invalid", f"{dep.reference} ({needed_by(dep)}): {exc}",
                                   _facts(dep, chart=dep.reference)))
        return
    selection.add(ref, needed_by(dep), dep.reference, releases_in(dep.details))


def _from_dependency(exporter: "HelmExporter", selection: Selection, dep: PlanDependency) -> None:
    needed = needed_by(dep)
    try:
        found = from_dependency(dep.reference)
    except BadReference as exc:
        selection.problems.append(("error", "chart-reference-invalid", f"{dep.reference} ({needed}): {exc}",
                                   _facts(dep, repository=dep.reference)))
        return
    if isinstance(found, ChartRef):
        selection.add(found, needed, dep.reference, releases_in(dep.details))
        return
    if exporter.options.repositories == "none":
        selection.problems.append(("warning", "chart-repository-not-copied",
                                   f"chart repository {found} ({needed}) names no chart, and repositories is none: "
                                   "not copied (set repositories: latest or all to copy it whole, or list the "
                                   "charts it needs under charts)", _facts(dep, repository=found)))
        return
    group = Group(found, tuple(dep.sources))
    try:
        charts, older = _expand(exporter, found)
    except ChartError as exc:
        selection.problems.append(("error", "chart-repository-unavailable",
                                   f"chart repository {found} ({needed}): {exc}", _facts(dep, repository=found)))
        return
    limit = exporter.options.max_charts_per_repository
    if older:
        group.left_out.append(f"{older} older chart version(s) left out (repositories: latest)")
    if len(charts) > limit:
        group.left_out.append(f"{len(charts) - limit} of its {len(charts)} chart versions are over "
                              f"max_charts_per_repository ({limit})")
    group.charts = charts[:limit]
    for ref in group.charts:
        selection.add(ref, f"in chart repository {found}, {needed}")
    selection.groups.append(group)


def _expand(exporter: "HelmExporter", repository: str) -> tuple[list[ChartRef], int]:
    """Every chart version (or the newest of each chart) a repository holds, in a stable order,
    and how many older versions `latest` left out."""
    latest = exporter.options.repositories == "latest"
    charts: list[ChartRef] = []
    total = 0
    if repository.startswith(OCI):
        host, _, prefix = repository[len(OCI):].partition("/")
        registry = exporter.sources.oci(host)
        for path in registry.catalog():
            parent, _, name = path.rpartition("/")
            if parent != prefix:
                continue
            versions = sorted(registry.tags(path), key=_version_key, reverse=True)
            total += len(versions)
            charts += [ChartRef(repository, name, v) for v in (versions[:1] if latest else versions)]
        return charts, total - len(charts)
    repo = exporter.sources.http(repository)
    for name in repo.names():
        versions = sorted({e.version for e in repo.entries(name)}, key=_version_key, reverse=True)
        total += len(versions)
        charts += [ChartRef(repository, name, v) for v in (versions[:1] if latest else versions)]
    return charts, total - len(charts)
