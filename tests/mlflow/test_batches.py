"""A run's params, metrics and tags go to MLflow in as few runs/log-batch bodies as its limits
allow (100 params, 100 tags, 1,000 metrics, 1,000 in all): checked against a real server, which
refuses a body over any limit and must then hold every item."""

from __future__ import annotations

from dr.exporters.mlflow.requesting import Client
from dr.exporters.mlflow.runs import BATCH, BATCH_TOTAL, batches, fill_run
from tests.mlflow.registries import Rest


def run_record(params: int, metrics: int, tags: int) -> dict:
    return {"params": {f"p{i:03d}": str(i) for i in range(params)},
            "metrics": {f"m{i:04d}": {"value": i / 3, "timestamp": 1_700_000_000_000, "step": 2} for i in range(metrics)},
            "tags": {f"t{i:03d}": f"v{i}" for i in range(tags)}}


def test_a_typical_run_is_one_body_and_every_body_is_within_the_limits():
    typical = {"params": [{}] * 20, "metrics": [{}] * 20, "tags": [{}] * 10}
    assert len(batches(typical)) == 1
    large = {"params": [{}] * 250, "metrics": [{}] * 1500, "tags": [{}] * 120}
    bodies = batches(large)
    for body in bodies:
        assert all(len(body.get(kind, [])) <= BATCH[kind] for kind in BATCH)
        assert sum(map(len, body.values())) <= BATCH_TOTAL
    assert {kind: sum(len(b.get(kind, [])) for b in bodies) for kind in BATCH} == {"params": 250, "metrics": 1500,
                                                                                   "tags": 120}


def test_a_run_over_every_limit_is_logged_whole_by_a_real_server(new_mlflow):
    url = new_mlflow()
    rest = Rest(url)
    run_id = rest.post("/runs/create", {"experiment_id": "0", "start_time": 1_700_000_000_000})["run"]["info"]["run_id"]
    record = run_record(params=230, metrics=1100, tags=150)
    fill_run(Client(url), record, run_id, params=list(record["params"]))
    data = rest.get("/runs/get", run_id=run_id)["run"]["data"]
    assert {p["key"]: p["value"] for p in data["params"]} == record["params"]
    assert {m["key"]: m["value"] for m in data["metrics"]} == {k: m["value"] for k, m in record["metrics"].items()}
    tags = {t["key"]: t["value"] for t in data["tags"]}
    assert {k: tags.get(k) for k in record["tags"]} == record["tags"]


class _Recording(Client):
    """The real client against a real server, keeping each request's path and body to read
    back what was sent (the server's answers are its own)."""

    def __init__(self, url: str) -> None:
        super().__init__(url)
        self.sent: list[tuple[str, dict]] = []

    def call(self, method, path, *, params=None, body=None, raw=False):
        self.sent.append((path, body or {}))
        return super().call(method, path, params=params, body=body, raw=raw)


def test_a_created_run_gets_its_tags_once_with_runs_create_not_again_in_log_batch(new_mlflow):
    from dr.exporters.mlflow.runs import SOURCE_RUN_TAG, create_run

    url = new_mlflow()
    client = _Recording(url)
    record = {**run_record(params=20, metrics=20, tags=10), "run_id": "0123abcd" * 4,
              "info": {"start_time": 1_700_000_000_000, "end_time": 1_700_000_100_000, "status": "FINISHED",
                       "run_name": "r"}}
    new = create_run(client, record, "0")
    batches_sent = [body for path, body in client.sent if path == "/runs/log-batch"]
    assert len(batches_sent) == 1 and not batches_sent[0].get("tags")
    assert len(batches_sent[0]["params"]) == 20 and len(batches_sent[0]["metrics"]) == 20
    data = Rest(url).get("/runs/get", run_id=new)["run"]["data"]
    tags = {t["key"]: t["value"] for t in data["tags"]}
    assert {k: tags.get(k) for k in record["tags"]} == record["tags"] and tags[SOURCE_RUN_TAG] == record["run_id"]
    assert len(data["params"]) == 20 and len(data["metrics"]) == 20
