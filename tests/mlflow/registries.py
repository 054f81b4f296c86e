"""A small but real model registry, written into a real MLflow server over its REST API.

Three models: `fraud-detector` (versions 1, 3, 4: version 2 deleted in the middle; aliases
champion -> 3, challenger -> 4; stages; tags), `churn` (two versions, one whose source is a
`runs:/` URI) and `ranker` (one version, no run). Runs carry params, metrics with history,
tags and a dataset input with its digest. Sources are s3:// URLs in `bucket` (moto in tests)
so a restore into a second server needs no local paths; `weights=True` puts bytes there.
"""

from __future__ import annotations

from typing import Any

import requests

API = "/api/2.0/mlflow"


class Rest:
    def __init__(self, url: str) -> None:
        self.url = url.rstrip("/")
        self.s = requests.Session()
        self.s.trust_env = False

    def post(self, path: str, body: dict) -> dict:
        r = self.s.post(self.url + API + path, json=body, timeout=30)
        assert r.status_code == 200, f"{path}: {r.status_code} {r.text[:300]}"
        return r.json()

    def patch(self, path: str, body: dict) -> dict:
        r = self.s.patch(self.url + API + path, json=body, timeout=30)
        assert r.status_code == 200, f"{path}: {r.status_code} {r.text[:300]}"
        return r.json()

    def delete(self, path: str, body: dict) -> None:
        r = self.s.delete(self.url + API + path, json=body, timeout=30)
        assert r.status_code == 200, f"{path}: {r.status_code} {r.text[:300]}"

    def get(self, path: str, **params: Any) -> dict:
        r = self.s.get(self.url + API + path, params=params, timeout=30)
        assert r.status_code == 200, f"{path}: {r.status_code} {r.text[:300]}"
        return r.json()


def tags(d: dict) -> list[dict]:
    return [{"key": k, "value": v} for k, v in d.items()]


def make_run(rest: Rest, experiment: str, name: str, *, lr: str, acc: list[float], start: int = 1_700_000_000_000) -> str:
    run = rest.post("/runs/create", {"experiment_id": experiment, "run_name": name, "start_time": start,
                                     "tags": tags({"team": "risk", "git_sha": "abc123"})})["run"]["info"]["run_id"]
    rest.post("/runs/log-batch", {"run_id": run, "params": tags({"lr": lr, "epochs": "3", "optimizer": "adamw"}),
                                  "metrics": [{"key": "acc", "value": v, "timestamp": start + i, "step": i}
                                              for i, v in enumerate(acc)]
                                  + [{"key": "loss", "value": 1 - acc[-1], "timestamp": start, "step": len(acc) - 1}]})
    rest.post("/runs/log-inputs", {"run_id": run, "datasets": [{
        "tags": [{"key": "mlflow.data.context", "value": "training"}],
        "dataset": {"name": "transactions-2026-10", "digest": "d1g35t" + name[-1], "source_type": "s3",
                    "source": '{"uri": "s3://datasets/transactions/2026-10"}', "schema": "", "profile": ""}}]})
    rest.post("/runs/update", {"run_id": run, "status": "FINISHED", "end_time": start + 60_000})
    return run


def build_registry(url: str, bucket: str, *, s3=None) -> dict[str, Any]:
    """Fill the (empty) server at url; returns run ids by name. With s3 (a boto3 client), each
    version's weights are written under s3://bucket/... as well."""
    rest = Rest(url)
    exp = rest.post("/experiments/create", {"name": "fraud", "tags": tags({"owner": "risk"})})["experiment_id"]
    runs = {n: make_run(rest, exp, n, lr=lr, acc=acc) for n, lr, acc in
            [("run-1", "0.1", [0.7, 0.8]), ("run-2", "0.05", [0.75, 0.85, 0.9]), ("run-3", "0.01", [0.8, 0.93])]}

    def weights(key: str) -> str:
        if s3 is not None:
            s3.put_object(Bucket=bucket, Key=f"{key}/MLmodel", Body=b"flavors: {}\n")
            s3.put_object(Bucket=bucket, Key=f"{key}/model.safetensors", Body=key.encode() * 1000)
        return f"s3://{bucket}/{key}"

    rest.post("/registered-models/create", {"name": "fraud-detector", "description": "card fraud scoring",
                                            "tags": tags({"domain": "payments", "tier": "1"})})
    for i, run in enumerate(["run-1", "run-1", "run-2", "run-3"], start=1):
        rest.post("/model-versions/create", {"name": "fraud-detector", "source": weights(f"fraud/v{i}"),
                                             "run_id": runs[run], "description": f"version {i}",
                                             "tags": tags({"validated": "yes" if i != 4 else "pending"})})
    rest.delete("/model-versions/delete", {"name": "fraud-detector", "version": "2"})
    rest.post("/model-versions/transition-stage", {"name": "fraud-detector", "version": "3", "stage": "Production",
                                                   "archive_existing_versions": False})
    rest.post("/model-versions/transition-stage", {"name": "fraud-detector", "version": "1", "stage": "Archived",
                                                   "archive_existing_versions": False})
    rest.post("/registered-models/alias", {"name": "fraud-detector", "alias": "champion", "version": "3"})
    rest.post("/registered-models/alias", {"name": "fraud-detector", "alias": "challenger", "version": "4"})

    rest.post("/registered-models/create", {"name": "churn", "tags": tags({"domain": "growth"})})
    rest.post("/model-versions/create", {"name": "churn", "source": weights("churn/v1"), "run_id": runs["run-2"]})
    rest.post("/model-versions/create", {"name": "churn", "source": f"runs:/{runs['run-3']}/model",
                                         "run_id": runs["run-3"]})
    rest.post("/registered-models/alias", {"name": "churn", "alias": "champion", "version": "1"})

    rest.post("/registered-models/create", {"name": "ranker", "description": "search ranking"})
    rest.post("/model-versions/create", {"name": "ranker", "source": weights("ranker/v1")})
    return runs


def registry_fingerprint(url: str) -> tuple:
    """What a restore must reproduce, field by field; server-stamped times and run ids left out
    (runs are compared by content: params, last metrics, tags without dr.*, inputs)."""
    rest = Rest(url)
    models = []
    for m in sorted(rest.get("/registered-models/search", max_results=1000).get("registered_models", []),
                    key=lambda m: m["name"]):
        versions = rest.get("/model-versions/search", filter=f"name='{m['name']}'").get("model_versions", [])
        vs = []
        for v in sorted(versions, key=lambda v: int(v["version"])):
            run = _run(rest, v["run_id"]) if v.get("run_id") else None
            vs.append((v["version"], v.get("current_stage"), v.get("description", ""), v.get("status"),
                       _source(v.get("source", "")), tuple(sorted((t["key"], t["value"]) for t in v.get("tags", [])
                                                                  if not t["key"].startswith("dr."))), run))
        models.append((m["name"], m.get("description", ""),
                       tuple(sorted((t["key"], t["value"]) for t in m.get("tags", []))),
                       tuple(sorted((a["alias"], a["version"]) for a in m.get("aliases", []))), tuple(vs)))
    return tuple(models)


def _source(source: str) -> str:
    return "runs:/<run>/" + source.split("/", 2)[2] if source.startswith("runs:/") else source


def _run(rest: Rest, run_id: str) -> tuple:
    run = rest.get("/runs/get", run_id=run_id)["run"]
    data = run.get("data", {})
    return (run["info"].get("run_name"), run["info"].get("status"), run["info"].get("start_time"),
            run["info"].get("end_time"),
            tuple(sorted((p["key"], p["value"]) for p in data.get("params", []))),
            tuple(sorted((m["key"], m["value"], m.get("step")) for m in data.get("metrics", []))),
            tuple(sorted((t["key"], t["value"]) for t in data.get("tags", [])
                         if not t["key"].startswith(("dr.", "mlflow.user")))),
            tuple(sorted((d["dataset"]["name"], d["dataset"]["digest"])
                         for d in run.get("inputs", {}).get("dataset_inputs", []))))
