"""A Secret's name is stored only sealed (docs/format.md 8.1), and unchanged Secrets upload nothing."""

from __future__ import annotations

import base64
import gzip
import os

import kubernetes

from dr.repository import names
from tests.kubernetes.conftest import failures

NAME = "secretnamecanary-b41d9e"


def _stored(root: str) -> list[bytes]:
    out = []
    for folder, _, files in os.walk(root):
        for name in files:
            with open(os.path.join(folder, name), "rb") as handle:
                data = handle.read()
            out.append(data + gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data)
    return out


def _sealed(stored) -> dict[str, dict]:
    return {a.identity: a.to_json() for a in stored if names.is_sealed(a)}


def test_a_secret_name_is_in_no_stored_byte_and_restores_exactly(pipeline, source, dest):
    source.create_objects([{"apiVersion": "v1", "kind": "Secret", "metadata": {"name": NAME, "namespace": "team-b"},
                            "stringData": {"token": "t"}}])
    try:
        first = pipeline.backup()
        sealed_first = _sealed(pipeline.parent)
        second = pipeline.backup()
    finally:
        kubernetes.client.CoreV1Api(source.api_client()).delete_namespaced_secret(NAME, "team-b")
    assert second.stats["artifacts_reused"] == second.stats["artifacts"] == first.stats["artifacts"]
    # no data uploaded: at most the catalog (the exporter lists kinds in parallel, so the order of its
    # lines may differ), and every secret line, its sealed name included, is its parent's byte for byte
    assert second.stats["blobs_uploaded"] <= 1 and second.stats["bytes_uploaded"] < 20000
    assert {c for a in second.artifacts for c in a.chunks} <= {c for a in first.artifacts for c in a.chunks}
    assert _sealed(pipeline.parent) == sealed_first and len(sealed_first) >= 2
    forms = [NAME.encode(), NAME.encode().hex().encode()]
    forms += [base64.b64encode(b"\x00" * shift + NAME.encode())[4:-4] for shift in range(3)]
    stored = _stored(pipeline.root)
    assert len(stored) > 10
    assert not [f for f in forms for data in stored if f in data]
    secrets = [a for a in pipeline.parent if a.kind == "kubernetes-objects" and a.sensitivity.value == "secret"]
    assert secrets and all(a.identity.startswith(names.PREFIX) and "members" not in a.meta for a in secrets)
    mine = [a for a in second.artifacts if a.identity == "secrets/team-b"]  # opened with the identity
    assert mine and f"secrets/team-b/{NAME}" in mine[0].meta["members"]
    spaces = [a for a in second.artifacts if a.identity == "namespaces"]
    assert failures(pipeline.restore(spaces + mine)) == []
    assert dest.get_object("v1", "Secret", NAME, "team-b")["data"] == {"token": base64.b64encode(b"t").decode()}
