"""Runs and experiments in the destination: found, compared, recreated (lineage of versions).

Why runs get new ids: MLflow assigns a run's id when it is created and has no way to choose
it, so a run recreated in a new server has a new id. Each recreated run carries the tag
`dr.source_run_id` (its id in the backup), which is how a second restore finds it again
(idempotence) and how the old -> new mapping is reported. A run that still exists under its
own id (restoring into the server it came from) is used as it is.

Params are immutable in MLflow: a param that differs is reported, never "fixed".
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from dr.exporters.mlflow.requesting import Client, MlflowError

SOURCE_RUN_TAG = "dr.source_run_id"
# MLflow's limits for one runs/log-batch: per kind, and for all kinds together
BATCH = {"params": 100, "metrics": 1000, "tags": 100}
BATCH_TOTAL = 1000


@dataclass
class RunPlan:
    old: str
    new: str | None = None  # the destination's run, when it exists
    differences: list[str] = field(default_factory=list)
    created: bool = False


class SharedRuns:
    """The runs of one restore, shared by the models restored in parallel: a run two models'
    versions share is looked up and created once (one lock per backup run id)."""

    def __init__(self, empty: bool = False) -> None:
        self._lock = threading.Lock()
        self._locks: dict[str, threading.Lock] = {}
        self.known: dict[str, str] = {}  # backup run id -> destination run id
        self.experiments: dict[str, str] = {}  # experiment name -> destination id (found or created)
        # the destination had no run at all when the restore began: no run can be found there
        # but those this restore creates (`known`), so none is looked up (a request per run saved)
        self.empty = empty

    def lock(self, old: str) -> threading.Lock:
        with self._lock:
            return self._locks.setdefault(old, threading.Lock())


def destination_empty(client: Client) -> bool:
    """Whether the destination holds no run at all (only its Default experiment, no run in it)."""
    found = client.get("/experiments/search", max_results=2, view_type="ALL").get("experiments", [])
    if len(found) > 1 or any(e["experiment_id"] != "0" for e in found):
        return False
    runs = client.post("/runs/search", {"experiment_ids": ["0"], "max_results": 1, "run_view_type": "ALL"})
    return not runs.get("runs")


def experiment_id(client: Client, record: dict | None, remap_location, create: bool,
                  known: dict[str, str] | None = None) -> str | None:
    """The destination experiment with the backup's name (created when asked and missing);
    `known` caches the ids found or created (one lookup per experiment, not per run)."""
    name = (record or {}).get("name") or "Default"
    known = {} if known is None else known
    if name not in known:
        found = _experiment(client, record, remap_location, create)
        if found is None:
            return None
        known[name] = found
    return known[name]


def _experiment(client: Client, record: dict | None, remap_location, create: bool) -> str | None:
    name = (record or {}).get("name") or "Default"
    try:
        return client.get("/experiments/get-by-name", experiment_name=name)["experiment"]["experiment_id"]
    except MlflowError as exc:
        if not exc.missing or not create:
            if exc.missing:
                return None
            raise
    body = {"name": name, "tags": [{"key": k, "value": v} for k, v in sorted((record or {}).get("tags", {}).items())]}
    location = remap_location((record or {}).get("artifact_location", ""))
    if location:
        body["artifact_location"] = location
    try:
        return client.post("/experiments/create", body)["experiment_id"]
    except MlflowError as exc:  # created meanwhile by a model restored in parallel
        if exc.code != "RESOURCE_ALREADY_EXISTS":
            raise
        return client.get("/experiments/get-by-name", experiment_name=name)["experiment"]["experiment_id"]


def find_run(client: Client, run: dict, experiment: str | None) -> str | None:
    """The destination's run for backup run `run`: the same id, or the one tagged with it."""
    try:
        client.get("/runs/get", run_id=run["run_id"])
        return run["run_id"]
    except MlflowError as exc:
        if not exc.missing and exc.status != 400:
            raise
    if experiment is None:
        return None
    found = client.post("/runs/search", {"experiment_ids": [experiment], "max_results": 1, "run_view_type": "ALL",
                                         "filter": f"tags.`{SOURCE_RUN_TAG}` = '{run['run_id']}'"})
    runs = found.get("runs", [])
    return runs[0]["info"]["run_id"] if runs else None


def differences(client: Client, run: dict, new: str) -> list[str]:
    """What the destination's run lacks or holds otherwise, by name (params, last metrics, tags)."""
    got = client.get("/runs/get", run_id=new)["run"].get("data", {})
    params = {p["key"]: p["value"] for p in got.get("params", [])}
    tags = {t["key"]: t["value"] for t in got.get("tags", [])}
    metrics = {m["key"]: (m["value"], m.get("step")) for m in got.get("metrics", [])}
    out = [f"param {k}" for k, v in run["params"].items() if params.get(k) != v]
    out += [f"tag {k}" for k, v in run["tags"].items() if tags.get(k) != v]
    out += [f"metric {k}" for k, m in run["metrics"].items() if metrics.get(k) != (m["value"], m.get("step"))]
    return out


def create_run(client: Client, run: dict, experiment: str) -> str:
    info = run["info"]
    tags = {**run["tags"], SOURCE_RUN_TAG: run["run_id"]}
    body = {"experiment_id": experiment, "start_time": info.get("start_time"), "run_name": info.get("run_name", ""),
            "user_id": info.get("user_id", ""), "tags": [{"key": k, "value": v} for k, v in sorted(tags.items())]}
    new = client.post("/runs/create", body)["run"]["info"]["run_id"]
    fill_run(client, run, new, params=list(run["params"]), tags=False)  # runs/create set them
    datasets = run.get("inputs", {}).get("dataset_inputs", [])
    if datasets:
        client.post("/runs/log-inputs", {"run_id": new, "datasets": datasets})
    client.post("/runs/update", {"run_id": new, "status": info.get("status", "FINISHED"),
                                 "end_time": info.get("end_time")})
    return new


def fill_run(client: Client, run: dict, new: str, params: list[str], tags: bool = True) -> None:
    """Log params (only those named: MLflow refuses to change one), metrics and, unless the run
    was just created with them (each tag logged twice was server work for nothing), tags."""
    history = run.get("metric_history")
    metrics = ([{"key": k, **p} for k, points in sorted(history.items()) for p in points] if history else
               [{"key": k, **m} for k, m in sorted(run["metrics"].items())])
    items = {"params": [{"key": k, "value": run["params"][k]} for k in params],
             "metrics": [{**m, "step": m.get("step") or 0} for m in metrics],
             "tags": [{"key": k, "value": v} for k, v in sorted(run["tags"].items())] if tags else []}
    for batch in batches(items):
        client.post("/runs/log-batch", {"run_id": new, **batch})


def batches(items: dict[str, list[dict]]) -> list[dict[str, list[dict]]]:
    """The items in as few log-batch bodies as MLflow's limits allow (one for a typical run:
    a request per run instead of one per kind)."""
    out: list[dict[str, list[dict]]] = []
    current: dict[str, list[dict]] = {}
    for kind, values in items.items():
        for value in values:
            if len(current.get(kind, [])) >= BATCH[kind] or sum(map(len, current.values())) >= BATCH_TOTAL:
                out.append(current)
                current = {}
            current.setdefault(kind, []).append(value)
    return out + ([current] if current else [])
