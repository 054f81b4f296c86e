"""Faults: a tracking server that is down, one that refuses us (401), a model deleted while the
export runs. Each fails clearly or is a finding, and the rest is still exported."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

import dr.exporters.mlflow.exporting as exporting
from dr.contract import OutcomeStatus
from dr.exporters.mlflow.requesting import MlflowUnreachable
from tests.checkpoints.test_exporter_helpers import Repo
from tests.harness.faultproxy import FaultProxy
from tests.mlflow.registries import Rest, build_registry, registry_fingerprint
from tests.mlflow.test_roundtrip import exporter, outcomes
from tests.servers import free_port


def test_a_server_that_is_down_fails_the_source_with_its_reason(tmp_path):
    url = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(MlflowUnreachable, match=rf"MLflow server {url} unreachable: ConnectionError"):
        Repo(tmp_path / "repo").backup(exporter({"tracking_uri": url, "timeout_seconds": 2}))


class _Refusing(BaseHTTPRequestHandler):
    def do_GET(self):
        body = json.dumps({"error_code": "UNAUTHENTICATED", "message": "You are not authenticated."}).encode()
        self.send_response(401)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def test_401_names_the_status_and_the_variables_never_the_token(tmp_path, monkeypatch):
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Refusing)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setenv("MLFLOW_TRACKING_TOKEN", "s3cr3t-t0ken")
    try:
        with pytest.raises(Exception) as caught:
            Repo(tmp_path / "repo").backup(exporter({"tracking_uri": f"http://127.0.0.1:{server.server_port}"}))
    finally:
        server.shutdown()
    said = str(caught.value)
    assert "HTTP 401 UNAUTHENTICATED" in said and "MLFLOW_TRACKING_TOKEN" in said and "s3cr3t" not in said


def test_a_model_deleted_during_the_export_is_a_finding(new_mlflow, tmp_path, monkeypatch):
    url = new_mlflow()
    build_registry(url, "no-bytes")
    rest = Rest(url)
    rest.post("/registered-models/create", {"name": "doomed"})
    rest.post("/model-versions/create", {"name": "doomed", "source": "s3://no-bytes/doomed/v1"})
    listed = exporting.list_versions

    def list_then_delete(client):
        found = listed(client)
        rest.delete("/registered-models/delete", {"name": "doomed"})  # after the listing, before reading
        return found
    monkeypatch.setattr(exporting, "list_versions", list_then_delete)
    backup = Repo(tmp_path / "repo").backup(exporter({"tracking_uri": url}))
    assert sorted(backup.by_identity()) == ["churn", "fraud-detector", "ranker"]
    assert backup.codes() == ["mlflow-model-deleted"]
    assert "'doomed' was deleted during the export" in backup.findings[0]["message"]


def test_a_server_out_of_database_connections_is_asked_again_and_the_restore_completes(
        mlflow_source, new_mlflow, tmp_path):
    """MLflow's 'QueuePool limit ... reached' (HTTP 400) means the request was not done: dr sends it
    again, model-versions/create included, and the version numbers still come out equal. The
    answer is injected by a real proxy in front of a real server (tests/harness/faultproxy.py),
    because exhausting the server's pool on purpose would take minutes of overload."""
    repo = Repo(tmp_path / "repo")
    done = repo.backup(exporter({"tracking_uri": mlflow_source["url"], "s3_endpoint_url": mlflow_source["endpoint"]}))
    to = new_mlflow()
    with FaultProxy(to, rate=0.25, seed=3, faults=("pool_exhausted",)) as proxy:
        restored = outcomes(repo, done.artifacts, proxy.url)
    assert proxy.counts["pool_exhausted"] >= 5, proxy.counts
    assert {o.status for o in restored.values()} == {OutcomeStatus.RESTORED}, restored
    assert registry_fingerprint(to) == registry_fingerprint(mlflow_source["url"])
