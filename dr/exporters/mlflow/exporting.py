"""One backup run of the `mlflow` exporter: list, token, read what changed, record, copy.

Order of work: the two listings (models, versions); for each model, in name order, one
artifact (kind `registered-model`, JSON Lines, see reading.py) whose change token covers the
model and its versions; its content is read only when the sink needs it, and once one model
needs reading the next few are read ahead in parallel (a first backup reads everything, an
unchanged one nothing). Then, with copy_artifacts, each selected version's artifacts are copied
to copy_to (copying.py) and recorded as one `model-weights-copy` artifact per version.

Dependencies of a model's artifact:
  mlflow-server         the tracking server (origin: a restore writes there or to its remap)
  mlflow-backend-store  the server's database, when the plan names it (origin, likewise)
  model-artifacts       per version: where its weights are (locating.py), so a champion whose
                        weights live only in a failed region is a blocker, unless a DR copy
                        (meta['provides']) covers it: then the audit says remapped
"""

from __future__ import annotations

import io
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING

from dr.contract import ArtifactSink
from dr.exporters.mlflow.locating import Lookups, resolve
from dr.exporters.mlflow.reading import (Lineage, ModelGone, aliases_of, change_token, dumps, list_models,
                                         list_versions, logged_model_location, model_lines)
from dr.model.artifacts import Dependency, Sensitivity
from dr.model.redaction import redact

if TYPE_CHECKING:
    from dr.exporters.mlflow import MlflowExporter

MODEL = "registered-model"
SERVER = "mlflow-server"
BACKEND = "mlflow-backend-store"
WEIGHTS = "model-artifacts"


class ModelRegistry:
    """The listings of one export, and the lookups resolving needs (shared with discover)."""

    def __init__(self, exporter: "MlflowExporter") -> None:
        self.x, self.o = exporter, exporter.options
        self.client = exporter.client()
        self.lineage = Lineage(self.client, self.o.metric_history)
        self.models = list_models(self.client, self.o.models)
        self.versions = list_versions(self.client)
        self._by_name = {m["name"]: m for m in self.models}
        self._lookups = Lookups(self._run_artifact_uri, self._logged_model_location, self._version_source)

    def versions_of(self, name: str) -> list[dict]:
        return self.versions.get(name, [])

    def location(self, version: dict) -> str | None:
        """Where this version's bytes are (MLflow 3's storage_location when the server gives it)."""
        known = version.get("storage_location")
        uri = known or version.get("source", "")
        return resolve(uri, self.o.tracking_uri, self.o.artifacts_destination, self._lookups)

    def _run_artifact_uri(self, run_id: str) -> str | None:
        return self.lineage.run(run_id).get("info", {}).get("artifact_uri")

    def _logged_model_location(self, model_id: str) -> str | None:
        return logged_model_location(self.lineage.logged_model(model_id))

    def _version_source(self, name: str, which: str) -> str | None:
        model = self._by_name.get(name)
        number = aliases_of(model).get(which[1:]) if which.startswith("@") and model else which
        found = next((v for v in self.versions_of(name) if str(v["version"]) == str(number)), None)
        return (found.get("storage_location") or found.get("source")) if found else None


class ExportRun:
    def __init__(self, exporter: "MlflowExporter", sink: ArtifactSink) -> None:
        self.x, self.sink, self.o, self.ctx = exporter, sink, exporter.options, exporter.context
        self.registry = ModelRegistry(exporter)
        self.settings = dumps({"metric_history": self.o.metric_history, "format": 1})
        self._pool = ThreadPoolExecutor(self.o.parallel, thread_name_prefix="dr-mlflow")
        self._ahead: dict[str, Future] = {}
        self._lock = threading.Lock()

    def execute(self) -> None:
        try:
            names = [m["name"] for m in self.registry.models]
            for i, model in enumerate(self.registry.models):
                self._model(model, names, i)
        finally:
            self._pool.shutdown(cancel_futures=True)
        if self.o.copy_artifacts:
            from dr.exporters.mlflow.copying import copy_versions
            copy_versions(self.x, self.sink, self.registry)

    def _model(self, model: dict, names: list[str], i: int) -> None:
        name = model["name"]
        versions = self.registry.versions_of(name)
        try:
            self.sink.write(MODEL, name, lambda: self._content(names, i), meta=self._meta(model, versions),
                            sensitivity=self.ctx.sensitivity or Sensitivity.INTERNAL,
                            dependencies=self.dependencies(versions),
                            change_token=change_token(model, versions, self.settings))
        except ModelGone as exc:  # the rest of the registry is still exported
            self.ctx.finding("warning", "mlflow-model-deleted", f"{exc}; not in this snapshot", model=name)

    def _content(self, names: list[str], i: int):
        """Model i's lines; reading the next models ahead (the sink asked, so things changed)."""
        for ahead in names[i:i + 2 * self.o.parallel]:
            with self._lock:
                if ahead not in self._ahead:
                    self._ahead[ahead] = self._pool.submit(self._lines, ahead)
        with self._lock:
            future = self._ahead.pop(names[i])
        return io.BytesIO(future.result())

    def _lines(self, name: str) -> bytes:
        lines = model_lines(self.registry.client, name, self.registry.versions_of(name), self.registry.lineage)
        return "".join(dumps(line) + "\n" for line in lines).encode()

    def _meta(self, model: dict, versions: list[dict]) -> dict:
        return {"versions": [int(v["version"]) for v in versions], "aliases": aliases_of(model),
                "server": redact(self.o.tracking_uri)}

    def dependencies(self, versions: list[dict]) -> list[Dependency]:
        deps = [Dependency(SERVER, redact(self.o.tracking_uri), "the registry's tracking server")]
        if self.o.backend_store:
            deps.append(Dependency(BACKEND, redact(self.o.backend_store), "the tracking server's backend database"))
        for v in versions:
            where = self.registry.location(v)
            if where:
                deps.append(Dependency(WEIGHTS, redact(where), f"version {v['version']}: source {redact(v.get('source', ''))}"))
            else:
                self.ctx.finding("warning", "mlflow-source-unresolved", f"model {v['name']} version {v['version']}: "
                                 f"source {redact(v.get('source', ''))} cannot be followed to its bytes",
                                 model=v["name"], version=v["version"])
        return deps
