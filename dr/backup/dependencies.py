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

from typing import Iterable

from dr.exporters.contract import ArtifactSink, PlanDependency
from dr.model.artifacts import Artifact


class DependencyLedger:
    """(kind, reference) -> the sources that need it, in the order first seen."""

    def __init__(self) -> None:
        self._found: dict[tuple[str, str], dict[str, None]] = {}

    def record(self, artifacts: Iterable[Artifact]) -> None:
        for artifact in artifacts:
            for dep in artifact.dependencies:
                self._found.setdefault((dep.kind, dep.reference), {})[artifact.source] = None

    def dependencies(self) -> list[PlanDependency]:
        return [PlanDependency(kind, ref, tuple(sources)) for (kind, ref), sources in self._found.items()]


class RecordingSink:
    """An ArtifactSink that tells the ledger what each written artifact depends on."""

    def __init__(self, sink: ArtifactSink, ledger: DependencyLedger):
        self._sink, self._ledger = sink, ledger
        self.source = sink.source

    def write(self, *args, **kwargs) -> Artifact:
        artifact = self._sink.write(*args, **kwargs)
        self._ledger.record([artifact])
        return artifact

    def transferred(self, nbytes: int) -> None:
        self._sink.transferred(nbytes)
