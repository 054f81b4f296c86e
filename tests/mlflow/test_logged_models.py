"""MLflow 3 logged models: a version whose source is `models:/m-<id>` (what mlflow.<flavor>.log_model
then register_model make) is placed at the logged model's artifact URI, its record is in the
backup, and it is restored from that location into a server that has no such logged model."""

from __future__ import annotations

from dr.contract import OutcomeStatus
from dr.exporters.mlflow.reading import parse
from dr.repository.reading import ArtifactReader
from tests.checkpoints.test_exporter_helpers import Repo
from tests.mlflow.registries import Rest
from tests.mlflow.test_roundtrip import exporter, outcomes
from tests.servers import mlflow_server


def test_a_logged_model_version_round_trips(tmp_path, new_mlflow, moto_endpoint):
    with mlflow_server(str(tmp_path / "src"), "s3://logged-models-root", moto_endpoint) as server:
        url = f"http://127.0.0.1:{server.port}"
        rest = Rest(url)
        exp = rest.post("/experiments/create", {"name": "lm"})["experiment_id"]
        run = rest.post("/runs/create", {"experiment_id": exp, "run_name": "train"})["run"]["info"]["run_id"]
        model = rest.post("/logged-models", {"experiment_id": exp, "name": "clf", "source_run_id": run})["model"]
        mid, where = model["info"]["model_id"], model["info"]["artifact_uri"]
        rest.post("/registered-models/create", {"name": "clf"})
        rest.post("/model-versions/create", {"name": "clf", "source": f"models:/{mid}", "model_id": mid, "run_id": run})
        repo = Repo(tmp_path / "repo")
        (artifact,) = repo.backup(exporter({"tracking_uri": url})).artifacts
    assert {(d.kind, d.reference) for d in artifact.dependencies if d.kind == "model-artifacts"} == \
        {("model-artifacts", where)}
    lines = parse(ArtifactReader(repo.repo, None).read(artifact))
    (logged,) = [r for r in lines if r["record"] == "logged-model"]
    assert logged["model_id"] == mid and logged["info"]["source_run_id"] == run
    to = new_mlflow()
    got = outcomes(repo, [artifact], to)
    assert got["clf/v1"].status == OutcomeStatus.RESTORED, got
    v1 = Rest(to).get("/model-versions/get", name="clf", version="1")["model_version"]
    assert v1["source"] == where
    assert {t["key"]: t["value"] for t in v1["tags"]}["dr.source_uri"] == f"models:/{mid}"
    # what dr drill compares: the version made from the logged model's location is the backup's
    from tests.mlflow.test_roundtrip import _compared
    assert _compared({"repo": repo, "artifacts": [artifact]}, to) == {"clf": ""}
