"""A test exporter that reads the other sources' dependencies (contract v2
`reads_plan_dependencies`), as an image or chart copier does: it writes one artifact listing
them. Not shipped with dr."""

from __future__ import annotations

import json
from typing import Iterator

from dr.contract import ArtifactSink, Discovered, Exporter, ExporterOptions, Outcome

KIND = "dependency-inventory"


class InventoryExporter(Exporter):
    type_name = "inventory"
    summary = "lists what the other sources of the plan depend on"
    contract_version = 2
    reads_plan_dependencies = True
    Options = ExporterOptions

    def discover(self) -> Iterator[Discovered]:
        yield Discovered(KIND, "all")

    def export(self, sink: ArtifactSink) -> None:
        found = [[d.kind, d.reference, list(d.sources)] for d in self.context.plan_dependencies()]
        sink.write(KIND, "all", json.dumps(sorted(found)).encode())

    def restore(self, artifacts, reader, request) -> Iterator[Outcome]:
        return iter(())
