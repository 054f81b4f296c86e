"""The mlflow exporter's contract v2 answers, without a server: options, destinations, remaps,
source locations."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from dr.contract import Rewrite
from dr.exporters.mlflow.locating import Lookups, resolve
from dr.exporters.mlflow.restoring import remapper
from tests.mlflow.test_roundtrip import exporter


def test_options_are_checked():
    with pytest.raises(ValidationError, match="copy_artifacts needs copy_to"):
        exporter({"tracking_uri": "http://m", "copy_artifacts": True})
    with pytest.raises(ValidationError, match="http:// or https://"):
        exporter({"tracking_uri": "databricks"})
    with pytest.raises(ValidationError, match="'champion': a selector"):
        exporter({"tracking_uri": "http://m", "copy_only": ["champion"]})


def test_destination_is_the_server_or_its_remap():
    x = exporter({"tracking_uri": "https://mlflow.prod.example"})
    (same,) = x.destinations([], lambda kind, ref: None)
    assert same.to == "https://mlflow.prod.example"
    moved = Rewrite("mlflow-server", "https://mlflow.prod.example", "https://mlflow.dr.example",
                    "https://mlflow.prod.example", "https://mlflow.dr.example")
    (dest,) = x.destinations([], lambda kind, ref: moved if kind == "mlflow-server" else None)
    assert dest.to == "https://mlflow.dr.example" and x.scratch_destination("/tmp/x") is None


def test_a_plan_remap_of_artifact_root_reaches_restore():
    x = exporter({"tracking_uri": "http://m"})
    heard = x.request_remap("artifact-root", "s3://prod-weights", "s3://dr-weights")
    assert heard == {"artifact-root:s3://prod-weights": "s3://dr-weights"}
    rewrite = remapper({**heard, "artifact-root:s3://prod-weights/special": "s3://elsewhere"})
    assert rewrite("s3://prod-weights/fraud/v3") == "s3://dr-weights/fraud/v3"
    assert rewrite("s3://prod-weights/special/x") == "s3://elsewhere/x"  # the longest prefix wins
    assert rewrite("s3://prod-weights-2/x") == "s3://prod-weights-2/x"


def test_sources_are_followed_to_their_bytes():
    lookups = Lookups(lambda run: {"r1": "s3://art/1/r1/artifacts"}.get(run),
                      lambda model: {"m-abc": "mlflow-artifacts:/5/models/m-abc/artifacts"}.get(model),
                      lambda name, which: {("fraud", "3"): "runs:/r1/model",
                                           ("fraud", "@champion"): "s3://w/fraud/v3"}.get((name, which)))

    def where(uri, dest=None):
        return resolve(uri, "https://mlflow.example", dest, lookups)
    assert where("s3://w/x") == "s3://w/x"
    assert where("runs:/r1/model") == "s3://art/1/r1/artifacts/model"
    assert where("runs:/gone/model") is None
    assert where("mlflow-artifacts:/5/x") == "https://mlflow.example/api/2.0/mlflow-artifacts/artifacts/5/x"
    assert where("mlflow-artifacts://host:5000/5/x", "s3://artifacts") == "s3://artifacts/5/x"
    assert where("models:/m-abc", "s3://artifacts") == "s3://artifacts/5/models/m-abc/artifacts"
    assert where("models:/fraud/3") == "s3://art/1/r1/artifacts/model"
    assert where("models:/fraud@champion") == "s3://w/fraud/v3"
