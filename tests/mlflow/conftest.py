"""Real MLflow servers for the mlflow exporter's tests (started once per session, by PID group).

mlflow_source:  a server holding tests/mlflow/registries.py's registry, whose weights are real
                objects in a moto bucket (the "source region");
new_mlflow:     make() -> the URL of a new, empty server (each stopped at the end of the session).
"""

from __future__ import annotations

import pytest

from tests.fixtures_s3 import s3_client
from tests.mlflow.registries import build_registry
from tests.servers import mlflow_server


@pytest.fixture(scope="session")
def mlflow_source(tmp_path_factory, moto_endpoint):
    bucket = "mlflow-weights-src"
    with mlflow_server(str(tmp_path_factory.mktemp("mlflow-source"))) as server:
        url = f"http://127.0.0.1:{server.port}"
        with pytest.MonkeyPatch.context() as mp:  # fake credentials for moto, only while building
            for k, v in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                         "AWS_DEFAULT_REGION": "us-east-1", "AWS_EC2_METADATA_DISABLED": "true"}.items():
                mp.setenv(k, v)
            s3 = s3_client(moto_endpoint)
            s3.create_bucket(Bucket=bucket)
            runs = build_registry(url, bucket, s3=s3)
        yield {"url": url, "bucket": bucket, "runs": runs, "endpoint": moto_endpoint, "server": server}


@pytest.fixture(scope="session")
def new_mlflow(tmp_path_factory):
    servers = []

    def make() -> str:
        server = mlflow_server(str(tmp_path_factory.mktemp("mlflow-destination"))).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.port}"
    yield make
    for server in servers:
        server.stop()


