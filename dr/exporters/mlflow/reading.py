"""Reading the registry: the two listings, change tokens, and one model's JSON Lines.

Where it sits: exporting.py asks for the listings (every export), and for a model's lines only
when its change token differs from the previous snapshot's (the sink decides, by calling the
content callable). The format of the lines is in docs/exporters/mlflow.md:

  {"record": "registered-model", ...}   first: name, description, tags, aliases, timestamps
  {"record": "model-version", ...}      each version as the server gives it, plus its aliases
  {"record": "run", ...}                each version's run: info, params, metrics, tags, inputs
  {"record": "experiment", ...}         each run's experiment
  {"record": "logged-model", ...}       each MLflow 3 logged model a version points at

Why two listings and not one per model: `registered-models/search` and `model-versions/search`
page over the whole registry (1,000 and 10,000 per page), so an unchanged registry of any size
costs a handful of requests, and each model's token covers its versions too (a tag set on an old
version does not move the model's last_updated_timestamp).
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import threading
from collections import OrderedDict
from typing import Any

from dr.exporters.mlflow.requesting import Client, MlflowError

FORMAT = "dr-mlflow-model"


class ModelGone(Exception):
    """The model was deleted between the listing and the reading of its lineage."""


def dumps(record: dict) -> str:
    return json.dumps(record, sort_keys=True, separators=(",", ":"))


def list_models(client: Client, patterns: list[str]) -> list[dict]:
    models = client.pages("/registered-models/search", "registered_models", max_results=1000)
    return sorted((m for m in models if any(fnmatch.fnmatchcase(m["name"], p) for p in patterns)),
                  key=lambda m: m["name"])


def list_versions(client: Client) -> dict[str, list[dict]]:
    """name -> its versions, by number (deleted versions are not listed by MLflow)."""
    found: dict[str, list[dict]] = {}
    for v in client.pages("/model-versions/search", "model_versions", max_results=10000):
        found.setdefault(v["name"], []).append(v)
    for versions in found.values():
        versions.sort(key=lambda v: int(v["version"]))
    return found


def change_token(model: dict, versions: list[dict], settings: str) -> str:
    """Moves whenever the model, any of its versions, or what the options make us read changes."""
    digest = hashlib.sha256(dumps(model).encode())
    for v in versions:
        digest.update(b"\n" + dumps(v).encode())
    digest.update(b"\n" + settings.encode())
    return "sha256:" + digest.hexdigest()


def aliases_of(model: dict) -> dict[str, str]:
    """alias -> version number, from the model record (model-versions/search has no aliases)."""
    return {a["alias"]: str(a["version"]) for a in model.get("aliases", [])}


class Lineage:
    """Runs, experiments and logged models, fetched once per export and shared by the models.

    Runs are kept for the last RUNS_KEPT asked only: a run is normally asked by the model it
    belongs to (and by its source's resolution just before), so a registry of any size costs
    bounded memory (5,000 runs of 50 entries are ~100 MB as dicts); one shared by far-apart
    models is fetched again."""

    RUNS_KEPT = 2048

    def __init__(self, client: Client, metric_history: bool) -> None:
        self.client, self.metric_history = client, metric_history
        self._lock = threading.Lock()
        self._runs: OrderedDict[str, dict] = OrderedDict()
        self._experiments: dict[str, dict] = {}
        self._logged: dict[str, dict] = {}

    def _cached(self, cache: dict, key: str, fetch) -> dict:
        with self._lock:
            if key in cache:
                if cache is self._runs:
                    self._runs.move_to_end(key)
                return cache[key]
        value = fetch(key)
        with self._lock:
            cache[key] = value
            if cache is self._runs and len(self._runs) > self.RUNS_KEPT:
                self._runs.popitem(last=False)
        return value

    def run(self, run_id: str) -> dict:
        return self._cached(self._runs, run_id, self._fetch_run)

    def experiment(self, experiment_id: str) -> dict:
        return self._cached(self._experiments, experiment_id, self._fetch_experiment)

    def logged_model(self, model_id: str) -> dict:
        return self._cached(self._logged, model_id, self._fetch_logged_model)

    def _found(self, path: str, key: str, **params: str) -> tuple[dict | None, str]:
        """(the record, "") or (None, why) when the server says it does not exist (deleted)."""
        try:
            return self.client.get(path, **params)[key], ""
        except MlflowError as exc:
            if not exc.missing:
                raise
            return None, str(exc)

    def _fetch_run(self, run_id: str) -> dict:
        run, missing = self._found("/runs/get", "run", run_id=run_id)
        if run is None:
            return {"record": "run", "run_id": run_id, "missing": missing}
        data = run.get("data", {})
        record = {"record": "run", "run_id": run_id, "info": run["info"],
                  "params": {p["key"]: p["value"] for p in data.get("params", [])},
                  "tags": {t["key"]: t["value"] for t in data.get("tags", [])},
                  "metrics": {m["key"]: {k: m.get(k) for k in ("value", "timestamp", "step")}
                              for m in data.get("metrics", [])},
                  "inputs": run.get("inputs", {}), "outputs": run.get("outputs", {})}
        if self.metric_history:
            record["metric_history"] = {key: self._history(run_id, key) for key in sorted(record["metrics"])}
        return record

    def _history(self, run_id: str, key: str) -> list[dict]:
        points = self.client.pages("/metrics/get-history", "metrics", run_id=run_id, metric_key=key,
                                   max_results=25000)
        return [{k: m.get(k) for k in ("value", "timestamp", "step")} for m in points]

    def _fetch_experiment(self, experiment_id: str) -> dict:
        e, missing = self._found("/experiments/get", "experiment", experiment_id=experiment_id)
        if e is None:
            return {"record": "experiment", "experiment_id": experiment_id, "missing": missing}
        return {"record": "experiment", "experiment_id": experiment_id, "name": e["name"],
                "artifact_location": e.get("artifact_location", ""), "lifecycle_stage": e.get("lifecycle_stage"),
                "tags": {t["key"]: t["value"] for t in e.get("tags", [])},
                "creation_time": e.get("creation_time"), "last_update_time": e.get("last_update_time")}

    def _fetch_logged_model(self, model_id: str) -> dict:
        found, missing = self._found(f"/logged-models/{model_id}", "model")
        if found is None:
            return {"record": "logged-model", "model_id": model_id, "missing": missing}
        return {"record": "logged-model", "model_id": model_id, **found}


def model_lines(client: Client, name: str, versions: list[dict], lineage: Lineage) -> list[dict]:
    """Every record of one model, in the order restore() needs them."""
    try:
        model = client.get("/registered-models/get", name=name)["registered_model"]
    except MlflowError as exc:
        if exc.missing:
            raise ModelGone(f"registered model {name!r} was deleted during the export") from None
        raise
    aliases = aliases_of(model)
    by_version: dict[str, list[str]] = {}
    for alias, number in sorted(aliases.items()):
        by_version.setdefault(number, []).append(alias)
    head = {"record": "registered-model", "format": FORMAT, "version": 1, "name": name,
            "description": model.get("description", ""), "tags": _tags(model), "aliases": aliases,
            "creation_timestamp": model.get("creation_timestamp"),
            "last_updated_timestamp": model.get("last_updated_timestamp"),
            "deployment_job_id": model.get("deployment_job_id"),
            "deployment_job_state": model.get("deployment_job_state")}
    lines = [head]
    for v in versions:
        lines.append({"record": "model-version", **v, "tags": _tags(v), "aliases": by_version.get(str(v["version"]), [])})
    runs = [lineage.run(r) for r in dict.fromkeys(v["run_id"] for v in versions if v.get("run_id"))]
    experiments = dict.fromkeys(r["info"]["experiment_id"] for r in runs if "info" in r)
    lines += runs
    lines += [lineage.experiment(e) for e in experiments]
    lines += [lineage.logged_model(m) for m in dict.fromkeys(filter(None, map(logged_model_id, versions)))]
    return lines


def logged_model_id(version: dict) -> str | None:
    """The MLflow 3 logged model a version names: its model_id, or its `models:/m-<id>` source
    (the 3.17 server does not return model_id in version records)."""
    source = version.get("source") or ""
    if version.get("model_id"):
        return version["model_id"]
    if source.startswith("models:/m-"):
        return source[len("models:/"):].split("/", 1)[0]
    return None


def logged_model_location(record: dict) -> str | None:
    """Where a logged model's artifacts are (its info.artifact_uri), from its record."""
    return (record.get("info") or {}).get("artifact_uri") or record.get("artifact_location")


def _tags(record: dict) -> dict[str, str]:
    return {t["key"]: t.get("value", "") for t in record.get("tags", [])}


def parse(content: bytes) -> list[dict[str, Any]]:
    return [json.loads(line) for line in content.decode().splitlines() if line.strip()]
