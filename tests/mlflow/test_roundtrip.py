"""The mlflow exporter against real MLflow servers: a round trip into an empty second server
compared field by field, numbers and aliases intact, idempotence, conflicts, remapped sources,
and what an unchanged registry costs."""

from __future__ import annotations

import json

import pytest

from dr.contract import ExportContext, OutcomeStatus
from dr.exporters.mlflow import MlflowExporter
from dr.exporters.mlflow.reading import parse
from tests.checkpoints.test_exporter_helpers import Repo
from tests.mlflow.registries import Rest, registry_fingerprint

S = OutcomeStatus


def exporter(options: dict) -> MlflowExporter:
    return MlflowExporter(ExportContext("registry", MlflowExporter.Options(**options), "/nonexistent"))


@pytest.fixture(scope="module")
def backed_up(mlflow_source, tmp_path_factory):
    repo = Repo(tmp_path_factory.mktemp("repo"))
    x = exporter({"tracking_uri": mlflow_source["url"], "s3_endpoint_url": mlflow_source["endpoint"]})
    backup = repo.backup(x)
    return {"repo": repo, "backup": backup, "artifacts": backup.artifacts}


def outcomes(repo, artifacts, to, **request) -> dict:
    x = exporter({"tracking_uri": "http://unused.invalid"})
    return {o.item: o for o in repo.restore(x, artifacts, to=to, **request)}


def test_one_artifact_per_model_with_versions_lineage_and_dependencies(backed_up, mlflow_source):
    arts = {a.identity: a for a in backed_up["artifacts"]}
    assert sorted(arts) == ["churn", "fraud-detector", "ranker"]
    fraud = arts["fraud-detector"]
    assert fraud.meta["versions"] == [1, 3, 4] and fraud.meta["aliases"] == {"champion": "3", "challenger": "4"}
    deps = {(d.kind, d.reference) for d in fraud.dependencies}
    bucket = mlflow_source["bucket"]
    assert ("mlflow-server", mlflow_source["url"]) in deps
    assert {r for k, r in deps if k == "model-artifacts"} == {f"s3://{bucket}/fraud/v{n}" for n in (1, 3, 4)}
    churn = {(d.kind, d.reference) for d in arts["churn"].dependencies}
    # runs:/ followed to the run's artifact root (a file:// path on this test server)
    assert any(k == "model-artifacts" and r.startswith("file://") and r.endswith("/artifacts/model") for k, r in churn)


def test_content_holds_versions_runs_inputs_and_experiments(backed_up, mlflow_source):
    from dr.repository.reading import ArtifactReader
    fraud = next(a for a in backed_up["artifacts"] if a.identity == "fraud-detector")
    lines = parse(ArtifactReader(backed_up["repo"].repo, None).read(fraud))
    kinds = [line["record"] for line in lines]
    assert kinds[0] == "registered-model" and kinds.count("model-version") == 3
    versions = {v["version"]: v for v in lines if v["record"] == "model-version"}
    assert versions["3"]["aliases"] == ["champion"] and versions["3"]["current_stage"] == "Production"
    runs = [r for r in lines if r["record"] == "run"]
    assert len(runs) == 3
    run = next(r for r in runs if r["run_id"] == mlflow_source["runs"]["run-2"])
    assert run["params"]["lr"] == "0.05" and run["metrics"]["acc"]["value"] == 0.9
    assert run["inputs"]["dataset_inputs"][0]["dataset"]["digest"] == "d1g35t2"
    assert [e["name"] for e in lines if e["record"] == "experiment"] == ["fraud"]


def test_round_trip_into_an_empty_server_field_by_field(backed_up, mlflow_source, new_mlflow):
    to = new_mlflow()
    first = outcomes(backed_up["repo"], backed_up["artifacts"], to)
    assert {o.status for o in first.values()} == {S.RESTORED}, first
    assert set(first) == {"churn", "churn/v1", "churn/v2", "fraud-detector", "fraud-detector/v1",
                          "fraud-detector/v3", "fraud-detector/v4", "ranker", "ranker/v1"}
    assert registry_fingerprint(to) == registry_fingerprint(mlflow_source["url"])
    # models:/fraud-detector@champion resolves to the same version number
    for url in (to, mlflow_source["url"]):
        got = Rest(url).get("/registered-models/alias", name="fraud-detector", alias="champion")
        assert got["model_version"]["version"] == "3"
    # the run ids changed: the mapping is in the outcome and in a tag of each version
    old = mlflow_source["runs"]["run-2"]
    assert old in first["fraud-detector"].reason and "->" in first["fraud-detector"].reason
    v3 = Rest(to).get("/model-versions/get", name="fraud-detector", version="3")["model_version"]
    assert {t["key"]: t["value"] for t in v3["tags"]}["dr.source_run_id"] == old and v3["run_id"] != old
    second = outcomes(backed_up["repo"], backed_up["artifacts"], to)
    assert {o.status for o in second.values()} == {S.UNCHANGED}, second


def test_version_two_is_gone_and_the_next_number_is_five(backed_up, new_mlflow):
    to = new_mlflow()
    outcomes(backed_up["repo"], backed_up["artifacts"], to)
    rest = Rest(to)
    numbers = sorted(int(v["version"]) for v in rest.get("/model-versions/search",
                                                         filter="name='fraud-detector'")["model_versions"])
    assert numbers == [1, 3, 4]
    made = rest.post("/model-versions/create", {"name": "fraud-detector", "source": "s3://x/y"})
    assert made["model_version"]["version"] == "5"


def test_conflict_until_overwrite_and_immutable_fields_fail(backed_up, new_mlflow):
    to = new_mlflow()
    outcomes(backed_up["repo"], backed_up["artifacts"], to)
    rest = Rest(to)
    rest.post("/registered-models/alias", {"name": "fraud-detector", "alias": "champion", "version": "4"})
    rest.post("/model-versions/set-tag", {"name": "ranker", "version": "1", "key": "validated", "value": "no"})
    got = outcomes(backed_up["repo"], backed_up["artifacts"], to)
    assert got["fraud-detector"].status == S.CONFLICT and "alias @champion" in got["fraud-detector"].reason
    assert got["ranker/v1"].status == S.UNCHANGED  # a tag the backup does not have: merged, not a conflict
    fixed = outcomes(backed_up["repo"], backed_up["artifacts"], to, overwrite=True)
    assert fixed["fraud-detector"].status == S.RESTORED
    assert rest.get("/registered-models/alias", name="fraud-detector", alias="champion")["model_version"]["version"] == "3"


def test_remap_uri_rewrites_sources(backed_up, mlflow_source, new_mlflow):
    to = new_mlflow()
    bucket = mlflow_source["bucket"]
    got = outcomes(backed_up["repo"], backed_up["artifacts"], to,
                   remap={f"artifact-root:s3://{bucket}": "s3://dr-replica/weights"})
    assert got["fraud-detector/v3"].status == S.RESTORED and "s3://dr-replica/weights/fraud/v3" in got["fraud-detector/v3"].reason
    v3 = Rest(to).get("/model-versions/get", name="fraud-detector", version="3")["model_version"]
    assert v3["source"] == "s3://dr-replica/weights/fraud/v3"


def test_dry_run_into_an_empty_server_changes_nothing(backed_up, new_mlflow):
    to = new_mlflow()
    got = outcomes(backed_up["repo"], backed_up["artifacts"], to, dry_run=True)
    assert {o.status for o in got.values()} == {S.PLANNED}
    assert Rest(to).get("/registered-models/search").get("registered_models", []) == []


def test_an_unchanged_registry_costs_two_listings(mlflow_source, tmp_path):
    repo = Repo(tmp_path / "repo")
    first = exporter({"tracking_uri": mlflow_source["url"], "s3_endpoint_url": mlflow_source["endpoint"]})
    counts = []
    for x in (first, exporter({"tracking_uri": mlflow_source["url"]})):
        made = x.client
        clients = []
        x.client = lambda url=None, made=made: clients.append(made(url)) or clients[-1]
        backup = repo.backup(x)
        counts.append(sum(c.requests for c in clients))
    assert backup.stats["artifacts_reused"] == backup.stats["artifacts"] == 3
    # two listings, plus one runs/get for the churn version whose source is runs:/ (to place it)
    assert counts[1] <= 3 < counts[0], counts


def test_metric_history_option_keeps_every_point(mlflow_source, tmp_path):
    from dr.repository.reading import ArtifactReader
    repo = Repo(tmp_path / "repo")
    backup = repo.backup(exporter({"tracking_uri": mlflow_source["url"], "metric_history": True, "models": ["fraud*"]}))
    fraud = backup.artifacts[0]
    runs = [r for r in parse(ArtifactReader(repo.repo, None).read(fraud)) if r["record"] == "run"]
    run2 = next(r for r in runs if r["run_id"] == mlflow_source["runs"]["run-2"])
    assert [p["value"] for p in run2["metric_history"]["acc"]] == [0.75, 0.85, 0.9]
    assert json.dumps(run2)  # plain JSON


def _compared(backed_up, to: str, **request) -> dict:
    """What dr drill finds of each model at `to`: "" or what differs from the backup."""
    from dr.contract import RestoreRequest
    from dr.drills.comparing import difference
    from dr.repository.reading import ArtifactReader
    reader = ArtifactReader(backed_up["repo"].repo, None)
    artifacts = {a.identity: a for a in backed_up["artifacts"]}
    found = exporter({"tracking_uri": "http://unused.invalid"}).restored_content(
        list(artifacts.values()), reader, RestoreRequest(to=to, **request))
    return {c.item: difference(c, artifacts[c.item], reader) for c in found}


def test_restored_content_compares_each_model_field_by_field(backed_up, mlflow_source, new_mlflow):
    to = new_mlflow()
    models = {"churn", "fraud-detector", "ranker"}
    assert _compared(backed_up, to) == {m: "nothing of it is at the destination" for m in models}
    outcomes(backed_up["repo"], backed_up["artifacts"], to)
    assert _compared(backed_up, to) == {m: "" for m in models}
    bucket = mlflow_source["bucket"]  # a remap the destination does not show: the sources differ
    moved = _compared(backed_up, to, remap={f"artifact-root:s3://{bucket}": "s3://dr-replica/weights"})
    assert "fingerprint 3/3 versions" in moved["fraud-detector"]
    rest = Rest(to)
    rest.post("/model-versions/set-tag", {"name": "ranker", "version": "1", "key": "validated", "value": "no"})
    assert _compared(backed_up, to)["ranker"] == ""  # a tag the backup does not have: merged, not compared

    rest.post("/registered-models/alias", {"name": "fraud-detector", "alias": "champion", "version": "4"})
    run = Rest(to).get("/model-versions/get", name="churn", version="1")["model_version"]["run_id"]
    rest.post("/runs/log-parameter", {"run_id": run, "key": "extra", "value": "1"})  # not the backup's: ignored
    rest.delete("/model-versions/delete", {"name": "ranker", "version": "1"})
    compared = _compared(backed_up, to)
    assert compared["churn"] == "" and "fingerprint 3/3 versions" in compared["fraud-detector"]
    assert "fingerprint 0/1 versions" in compared["ranker"]
    # a run's last metric moved on: the lineage of the versions made from it differs
    metric = rest.get("/runs/get", run_id=run)["run"]["data"]["metrics"][0]
    rest.post("/runs/log-metric", {"run_id": run, "key": metric["key"], "value": metric["value"] + 1,
                                   "timestamp": int(metric["timestamp"]) + 1000, "step": int(metric.get("step", 0)) + 1})
    assert "fingerprint 2/2 versions" in _compared(backed_up, to)["churn"]
