"""etcd servers (Debian etcd-server) for the etcd exporter's tests, and small clients for them."""

from __future__ import annotations

import base64
import json
import urllib.request

import pyrage
import pytest

from tests.exporters.conftest import harness  # noqa: F401  (the repository round-trip harness)
from tests.servers import etcd_server


def call(endpoint: str, path: str, body: dict) -> dict:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    request = urllib.request.Request(endpoint + path, json.dumps(body).encode(), method="POST")
    with opener.open(request, timeout=10) as answer:
        return json.loads(answer.read())


def put(endpoint: str, key: str, value: str) -> None:
    call(endpoint, "/v3/kv/put", {"key": base64.b64encode(key.encode()).decode(),
                                  "value": base64.b64encode(value.encode()).decode()})


def read_all(endpoint: str) -> dict[str, str]:
    """Every key and value of the cluster (the range of all keys: key \\0, range_end \\0)."""
    answer = call(endpoint, "/v3/kv/range", {"key": "AA==", "range_end": "AA=="})
    return {base64.b64decode(kv["key"]).decode(): base64.b64decode(kv.get("value", "")).decode()
            for kv in answer.get("kvs", [])}


KEYS = {"/registry/secrets/team-a/db": "password=hunter2",
        "/registry/configmaps/team-a/settings": "replicas=3",
        "/registry/namespaces/team-a": "{}"}


def snapshot(endpoint: str) -> bytes:
    """The cluster's snapshot (POST /v3/maintenance/snapshot: JSON lines of base64 chunks)."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    request = urllib.request.Request(endpoint + "/v3/maintenance/snapshot", b"{}", method="POST")
    with opener.open(request, timeout=10) as answer:
        return b"".join(base64.b64decode(json.loads(line)["result"]["blob"]) for line in answer if line.strip())


def fill(endpoint: str, keys: dict[str, str] = KEYS) -> None:
    for key, value in keys.items():
        put(endpoint, key, value)


@pytest.fixture(scope="module")
def etcd(tmp_path_factory):
    """A one-member cluster holding KEYS: its client URL."""
    with etcd_server(str(tmp_path_factory.mktemp("etcd") / "data"), name="cp1") as server:
        endpoint = f"http://127.0.0.1:{server.port}"
        fill(endpoint)
        yield endpoint


@pytest.fixture
def age_keys():
    identity = pyrage.x25519.Identity.generate()
    return str(identity.to_public()), identity
