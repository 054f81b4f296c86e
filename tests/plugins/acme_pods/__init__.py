"""A test exporter whose artifacts run containers: it records each pod's images as `image`
dependencies (as the kubernetes exporter does for pod templates), for the images exporter's
tests. Not shipped with dr."""

from __future__ import annotations

import json
import os
from typing import Iterator

from dr.exporters.contract import ArtifactSink, Discovered, Exporter, ExporterOptions, Outcome
from dr.model.artifacts import Dependency

KIND = "pod"


class PodsExporter(Exporter):
    type_name = "pods"
    summary = "pods and the images they run, from a JSON file {pod: [image, ...]}"
    contract_version = 2

    class Options(ExporterOptions):
        file: str

    def _pods(self) -> dict[str, list[str]]:
        with open(os.path.join(self.context.base_dir, self.options.file)) as handle:
            return json.load(handle)

    def discover(self) -> Iterator[Discovered]:
        for name in self._pods():
            yield Discovered(KIND, name)

    def export(self, sink: ArtifactSink) -> None:
        for name, images in sorted(self._pods().items()):
            sink.write(KIND, name, json.dumps(images).encode(),
                       dependencies=[Dependency("image", image, f"pod {name}") for image in images])

    def restore(self, artifacts, reader, request) -> Iterator[Outcome]:
        return iter(())
