"""A third-party exporter written against contract v2 only: `tables`, feature tables kept as
JSON files that name the feature-store endpoint serving them. Not shipped with dr.

It exists to show that a new exporter is one package plus an entry point: it declares its own
remap kind (`table-endpoint`), ordering role (`feature-tables`) and rule, and default
destination, and dr's restore planner, audit and drills use them with no edit to dr.
tests/plugins/installing.py installs it as a distribution, the way a plugin is installed.
"""

from __future__ import annotations

import json
import os
from typing import Iterator

from dr.contract import (ArtifactSink, ContentReader, Destination, Discovered, Exporter, ExporterOptions, Ordering,
                         OrderingRule, Outcome, OutcomeStatus, RemapKind, RestoreRequest, Rewriter, prefix_rewrite)
from dr.model.artifacts import Artifact, Dependency

KIND = "feature-table"
ENDPOINT = "table-endpoint"  # the dependency kind: the feature store that serves a table


class TablesExporter(Exporter):
    type_name = "tables"
    summary = "feature tables (JSON) and the feature-store endpoint that serves them"
    contract_version = 2
    remap_kinds = (RemapKind("table-endpoint", frozenset({ENDPOINT}), "old: a feature-store URL; new: the "
                             "surviving feature store", request_prefix="endpoint:"),)
    ordering = Ordering(frozenset({"feature-tables"}), (OrderingRule(
        "role:feature-tables", "type:files",
        "feature tables before the service configuration that reads them: config restored first "
        "would point the services at empty tables"),))

    class Options(ExporterOptions):
        folder: str  # the tables; relative to the plan's folder
        endpoint: str  # the feature store serving them

    def _folder(self) -> str:
        return os.path.join(self.context.base_dir, self.options.folder)

    def _tables(self) -> list[str]:
        return sorted(n for n in os.listdir(self._folder()) if n.endswith(".json"))

    def discover(self) -> Iterator[Discovered]:
        for name in self._tables():
            yield Discovered(KIND, name)

    def export(self, sink: ArtifactSink) -> None:
        for name in self._tables():
            path = os.path.join(self._folder(), name)
            st = os.stat(path)
            sink.write(KIND, name, lambda path=path: open(path, "rb"),
                       dependencies=[Dependency(ENDPOINT, self.options.endpoint)],
                       change_token=f"{st.st_size}:{st.st_mtime_ns}:{st.st_ino}")

    def destinations(self, artifacts: list[Artifact], rewrite: Rewriter) -> list[Destination]:
        return [Destination(artifacts, self._folder(), "where the tables came from")]

    def restore(self, artifacts: list[Artifact], reader: ContentReader,
                request: RestoreRequest) -> Iterator[Outcome]:
        to = request.to or self._folder()
        endpoints = {k[len("endpoint:"):]: v for k, v in request.remap.items() if k.startswith("endpoint:")}
        for artifact in artifacts:
            yield self._restore_one(artifact, reader.read(artifact), to, endpoints, request)

    @staticmethod
    def _restore_one(artifact: Artifact, data: bytes, to: str, endpoints: dict[str, str],
                     request: RestoreRequest) -> Outcome:
        table = json.loads(data)
        for old, new in endpoints.items():
            table["endpoint"] = prefix_rewrite(table["endpoint"], old, new) or table["endpoint"]
        wanted = json.dumps(table, sort_keys=True).encode()
        path = os.path.join(to, artifact.identity)
        current = open(path, "rb").read() if os.path.exists(path) else None
        if current == wanted:
            return Outcome(artifact.identity, OutcomeStatus.UNCHANGED, "already identical")
        if current is not None and not request.overwrite:
            return Outcome(artifact.identity, OutcomeStatus.CONFLICT, f"{path} differs; --overwrite replaces it")
        if request.dry_run:
            return Outcome(artifact.identity, OutcomeStatus.PLANNED, f"would write {path}")
        os.makedirs(to, exist_ok=True)
        with open(path + ".partial", "wb") as handle:
            handle.write(wanted)
        os.replace(path + ".partial", path)
        return Outcome(artifact.identity, OutcomeStatus.RESTORED, f"to {path}, served by {table['endpoint']}")
