"""The `mlflow` exporter: MLflow registered models, versions, aliases and lineage, restored with
version numbers intact; optionally each version's weights copied to DR storage.

Where it sits: dr.backup calls export() with a sink, dr.restore calls restore() with a reader,
the planner, the audit and `dr verify` ask the contract v2 questions. The modules:
  options      the plan's options            requesting  the REST API (auth, errors, pages)
  reading      listings, change tokens, one model's JSON Lines
  locating     a version's source followed to where its bytes are (its dependency)
  exporting    one backup run                copying     weight copies, their verification
  runs         runs and experiments in the destination (ids mapped)
  restoring    models and versions in the destination, numbers intact

What a snapshot holds: one `registered-model` artifact per model (JSON Lines, docs/exporters/mlflow.md
section `mlflow`); with copy_artifacts, one small `model-weights-copy` artifact per copied
version, naming the copy and its manifest's digest and providing the version's source location.
dr never imports the `mlflow` package: the REST API is enough, and that package is large.
"""

from __future__ import annotations

from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Iterator

from dr.contract import (ArtifactSink, ContentReader, CopyReport, DeployNeeds, Destination, Discovered, DrillComparison,
                         Exporter, Ordering, OrderingRule, Outcome, OutcomeStatus, OutsideCopies, Planning, RemapKind,
                         RestoreOption, RestoreRequest, RestoredContent, Rewriter, RtoEstimates, RunNeeds, Sizing)
from dr.exporters.mlflow.deploying import run_needs
from dr.exporters.mlflow.exporting import BACKEND, MODEL, SERVER, WEIGHTS, ExportRun, ModelRegistry
from dr.exporters.mlflow.options import MlflowOptions
from dr.exporters.mlflow.reading import parse
from dr.exporters.mlflow.requesting import Client, MlflowError
from dr.exporters.mlflow.restoring import FROM_COPIES, REMAP_PREFIX, ModelRestore
from dr.exporters.mlflow.runs import SharedRuns, destination_empty
from dr.model.artifacts import Artifact
from dr.model.redaction import redact

COPY = "model-weights-copy"

__all__ = ["COPY", "MODEL", "MlflowExporter"]


class MlflowExporter(Exporter, Planning, OutsideCopies, DeployNeeds, RtoEstimates, DrillComparison):
    type_name = "mlflow"
    summary = ("MLflow model registry: models, versions, aliases, stages and their runs' lineage, restored "
               "with version numbers intact; weights optionally copied to DR storage")
    contract_version = 2
    sizing = Sizing(76, "MLflow registry, export")
    Options = MlflowOptions
    remap_kinds = (
        RemapKind(SERVER, frozenset({SERVER, BACKEND}), "old: the tracking server URL; new: the server the "
                  "registry is restored into"),
        RemapKind("artifact-root", frozenset({WEIGHTS}), "old: where versions' artifacts were (s3://bucket/prefix, "
                  "a URL); new: where they are now (a DR copy, a replica bucket)", request_prefix=REMAP_PREFIX),
    )
    # the registry is written into its server (or the server's remap): judged as the destination
    origin_kinds = frozenset({SERVER, BACKEND})
    ordering = Ordering(frozenset({"model-registry"}), (OrderingRule(
        "role:model-registry", "@workloads",
        "the registry before serving workloads: a server resolving models:/name@champion at start-up "
        "fails, or serves whatever version the alias names in an empty registry, until it is back"),))
    restore_options = (
        RestoreOption("remap-uri", "OLD=NEW", "rewrite version sources starting with OLD to NEW "
                      "(s3://old-bucket=s3://dr-bucket)", REMAP_PREFIX, pairs=True),
        RestoreOption("sources-from-copies", "", "create each version whose weights have a DR copy "
                      "(copy_artifacts) with that copy as its source", FROM_COPIES, switch=True),
    )

    def client(self, url: str | None = None) -> Client:
        return Client(url or self.options.tracking_uri, timeout=self.options.timeout_seconds,
                      pool=self.options.parallel)

    # -- the contract -----------------------------------------------------------------------
    def discover(self) -> Iterator[Discovered]:
        registry = ModelRegistry(self)
        for model in registry.models:
            versions = registry.versions_of(model["name"])
            yield Discovered(MODEL, model["name"], f"{len(versions)} versions")
            if self.options.copy_artifacts:
                from dr.exporters.mlflow.copying import selected
                for v in selected(self.options.copy_only, model, versions):
                    where = registry.location(v)
                    if where:
                        yield Discovered(COPY, redact(where), f"{model['name']} version {v['version']}")

    def export(self, sink: ArtifactSink) -> None:
        ExportRun(self, sink).execute()

    def restore(self, artifacts: list[Artifact], reader: ContentReader,
                request: RestoreRequest) -> Iterator[Outcome]:
        client = self.client(request.to)
        copies = self._copies(artifacts, reader, request)
        try:
            shared = SharedRuns(empty=destination_empty(client))
        except MlflowError:
            shared = SharedRuns()  # each model's outcome says what is wrong with the destination

        def one(name: str, lines: list[dict]) -> list[Outcome]:
            try:
                return list(ModelRestore(client, lines, request, copies, shared).run())
            except MlflowError as exc:  # this model's outcome; the others go on
                return [Outcome(name, OutcomeStatus.FAILED, str(exc))]
        # models in parallel (the server's latency, not dr, is the limit); outcomes in name order.
        # A model's backup is read and parsed when it is submitted, a window of them at a time,
        # so memory holds a few models, not the whole registry (500 x 10 is ~100 MB parsed).
        window: deque[Future] = deque()
        with ThreadPoolExecutor(self.options.parallel, thread_name_prefix="dr-mlflow-restore") as pool:
            for a in sorted((a for a in artifacts if a.kind == MODEL), key=lambda a: a.identity):
                window.append(pool.submit(one, a.identity, parse(reader.read(a))))
                if len(window) >= 2 * self.options.parallel:
                    yield from window.popleft().result()
            while window:
                yield from window.popleft().result()
        for artifact in sorted((a for a in artifacts if a.kind == COPY), key=lambda a: a.identity):
            from dr.exporters.mlflow.copying import restore_outcome
            yield restore_outcome(self, artifact, reader)

    def restored_content(self, artifacts: list[Artifact], reader: ContentReader,
                         request: RestoreRequest) -> Iterator[RestoredContent]:
        """Each model as the destination server holds it now against the backup, field by field
        (ModelRestore.fingerprints); the weight copies' records are not restored, not compared."""
        client = self.client(request.to)
        copies, shared = self._copies(artifacts, reader, request), SharedRuns()
        planning = RestoreRequest(to=request.to, remap=dict(request.remap), dry_run=True)
        for a in sorted((a for a in artifacts if a.kind == MODEL), key=lambda a: a.identity):
            restored, backed_up = ModelRestore(client, parse(reader.read(a)), planning, copies, shared).fingerprints()
            yield RestoredContent(a.identity, restored=restored, backed_up=backed_up)

    def _copies(self, artifacts: list[Artifact], reader: ContentReader,
                request: RestoreRequest) -> dict[tuple[str, int], str]:
        """(model, version) -> its DR copy's files, for --sources-from-copies (intact copies only)."""
        if request.remap.get(FROM_COPIES) != "true":
            return {}
        from dr.exporters.mlflow.copying import check
        return {(a.meta["model"], int(a.meta["version"])): f"{a.meta['copy']}/files" for a in artifacts
                if a.kind == COPY and not check(self, a, reader, read_data=False)}

    # -- contract v2 ---------------------------------------------------------------------------
    def run_needs(self) -> RunNeeds:
        return run_needs(self.options, self.context.base_dir)

    def destinations(self, artifacts: list[Artifact], rewrite: Rewriter) -> list[Destination]:
        """Back into the server the registry came from, or that server's mlflow-server remap."""
        origin = redact(self.options.tracking_uri)
        found = rewrite(SERVER, origin)
        if found:
            return [Destination(list(artifacts), found.new, found.describe())]
        return [Destination(list(artifacts), self.options.tracking_uri, "the tracking server it came from")]

    def scratch_destination(self, folder: str) -> str | None:
        return None  # a folder cannot hold a registry: a drill needs a scratch MLflow server (--to)

    def restore_bytes(self, artifacts: list[Artifact]) -> dict[str, int]:
        return {"data_warmup": sum(a.size for a in artifacts if a.kind == MODEL)}

    def verify_copies(self, artifacts: list[Artifact], reader: ContentReader, read_data: bool) -> list[CopyReport]:
        from dr.exporters.mlflow.copying import verify_recorded
        return verify_recorded(self, [a for a in artifacts if a.kind == COPY], reader, read_data)
