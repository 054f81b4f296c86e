"""The demo's model registry: a small registry written into a stand-in MLflow server over its REST
API, an `mlflow` source backing it up, and the check that `champion` resolves to the same version
number in the second server the demo restores into.

Two models with three live versions each, every version from a run with params and metrics:
`fraud-detector` had a fourth version, its second, deleted (so its versions are 1, 3 and 4) and
`champion` on 3; `churn` has 1, 2, 3 and `champion` on 2. MLflow numbers versions itself, in
order, so `champion -> 3` only survives the restore if the deleted number is recreated too.
The servers come from outside (scripts/demo starts them): dr talks to MLflow over REST only.
"""

from __future__ import annotations

import requests

API = "/api/2.0/mlflow"
SOURCE_NAME = "model-registry"
# model -> (versions created, version deleted afterwards, champion's version)
MODELS = {"fraud-detector": (4, "2", "3"), "churn": (3, None, "2")}

MLFLOW_SOURCE = """\
  - name: {name}
    type: mlflow
    tracking_uri: "{url}"
"""
# The MLflow service and its artifact store run beside the cluster, in region-a: losing cluster-a
# leaves them, so the whole-plan restore (--failed cluster-a) is not blocked on the weights.
MLFLOW_LOCATION = """\
  - {{name: mlflow-service, domain: region-a, kind: service, prefixes: ["{url}", "{artifacts}"]}}
"""


class _Rest:
    def __init__(self, url: str) -> None:
        self.url = url.rstrip("/") + API
        self.session = requests.Session()
        self.session.trust_env = False  # the stand-ins are on loopback: no proxy

    def call(self, method: str, path: str, **kwargs) -> dict:
        response = self.session.request(method, self.url + path, timeout=30, **kwargs)
        if response.status_code != 200:
            raise RuntimeError(f"MLflow {path}: HTTP {response.status_code} {response.text[:200]}")
        return response.json()


def build_registry(url: str) -> str:
    """Fill the empty server at `url`; returns its experiment's artifact root (where the weights
    of `runs:/` sources live), so the plan can place it."""
    rest = _Rest(url)
    experiment = rest.call("POST", "/experiments/create", json={"name": "demo-training"})["experiment_id"]
    for model, (count, deleted, champion) in MODELS.items():
        rest.call("POST", "/registered-models/create", json={"name": model, "description": f"demo {model}"})
        for n in range(1, count + 1):
            run = _run(rest, experiment, f"{model}-{n}", n)
            rest.call("POST", "/model-versions/create", json={
                "name": model, "source": f"runs:/{run}/model", "run_id": run, "description": f"trained {n}"})
        if deleted:
            rest.call("DELETE", "/model-versions/delete", json={"name": model, "version": deleted})
        rest.call("POST", "/registered-models/alias", json={"name": model, "alias": "champion", "version": champion})
    return rest.call("GET", "/experiments/get", params={"experiment_id": experiment})["experiment"]["artifact_location"]


def _run(rest: _Rest, experiment: str, name: str, n: int) -> str:
    run = rest.call("POST", "/runs/create", json={"experiment_id": experiment, "run_name": name,
                                                  "start_time": 1_700_000_000_000 + n})["run"]["info"]["run_id"]
    rest.call("POST", "/runs/log-batch", json={
        "run_id": run, "params": [{"key": "lr", "value": str(0.1 / n)}, {"key": "epochs", "value": "3"}],
        "metrics": [{"key": "accuracy", "value": 0.7 + n / 100, "timestamp": 1_700_000_000_000, "step": 0}]})
    rest.call("POST", "/runs/update", json={"run_id": run, "status": "FINISHED"})
    return run


def champions(url: str) -> dict[str, str]:
    """Model name -> the version number `models:/<name>@champion` resolves to."""
    rest = _Rest(url)
    return {model: rest.call("GET", "/registered-models/alias", params={"name": model, "alias": "champion"})
            ["model_version"]["version"] for model in MODELS}


def versions(url: str) -> dict[str, list[str]]:
    """Model name -> its version numbers, in order."""
    rest = _Rest(url)
    found = {}
    for model in MODELS:
        listed = rest.call("GET", "/model-versions/search", params={"filter": f"name='{model}'"})
        found[model] = sorted((v["version"] for v in listed.get("model_versions", [])), key=int)
    return found
