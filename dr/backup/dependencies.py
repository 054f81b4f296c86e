"""What the other sources of a plan depend on, for exporters that copy it (images, charts).

Where it sits: dr.backup.running runs the sources of a backup in plan order, except that
sources whose exporter `reads_plan_dependencies` run after all the others. While sources
export, a DependencyLedger records the distinct dependencies of every artifact they write;
a reading source's `ExportContext.plan_dependencies()` then returns them, together with the
dependencies recorded in the newest snapshot of each plan source that did not export in this
run (not selected with --source, or failed). A reading source never sees its own, nor another
reading source's, dependencies: two copiers cannot feed each other in a loop.
"""

from __future__ import annotations

from typing import Callable, Iterable

from dr.contract import DETAILS_KEPT, ArtifactSink, PlanDependency
from dr.model.artifacts import Artifact


class DependencyLedger:
    """(kind, reference) -> the sources that need it and the details they recorded, in the order
    first seen (details bounded: a reference a thousand pods share keeps DETAILS_KEPT)."""

    def __init__(self) -> None:
        self._found: dict[tuple[str, str], dict[str, None]] = {}
        self._details: dict[tuple[str, str], dict[str, None]] = {}

    def record(self, artifacts: Iterable[Artifact]) -> None:
        for artifact in artifacts:
            for dep in artifact.dependencies:
                key = (dep.kind, dep.reference)
                self._found.setdefault(key, {})[artifact.source] = None
                details = self._details.setdefault(key, {})
                if dep.detail and len(details) < DETAILS_KEPT:
                    details[dep.detail] = None

    def dependencies(self) -> list[PlanDependency]:
        return [PlanDependency(kind, ref, tuple(sources), tuple(self._details.get((kind, ref), ())))
                for (kind, ref), sources in self._found.items()]


class WatchedSink:
    """An ArtifactSink that shows each written artifact to `seen`."""

    def __init__(self, sink: ArtifactSink, seen: Callable[[Artifact], None]):
        self._sink, self._seen = sink, seen
        self.source = sink.source

    def write(self, *args, **kwargs) -> Artifact:
        artifact = self._sink.write(*args, **kwargs)
        self._seen(artifact)
        return artifact

    def unchanged(self, *args, **kwargs) -> bool:
        return self._sink.unchanged(*args, **kwargs)

    def transferred(self, nbytes: int) -> None:
        self._sink.transferred(nbytes)


class RecordingSink(WatchedSink):
    """An ArtifactSink that tells the ledger what each written artifact depends on."""

    def __init__(self, sink: ArtifactSink, ledger: DependencyLedger):
        super().__init__(sink, lambda artifact: ledger.record([artifact]))
