"""Opt-in end-to-end round trip against a REAL Kubernetes cluster (kopf's --with-e2e pattern).

The rest of tests/kubernetes runs against the emulated API server (tests/harness/kube.py),
which cannot show what only a real kube-apiserver does (admission, defaulting, RBAC,
controllers). This module runs the same round trip against real clusters:

  DR_E2E_KUBECONFIG       the kubeconfig (required: without it every test here is SKIPPED)
  DR_E2E_SOURCE_CONTEXT   the context to back up (default: the kubeconfig's current context)
  DR_E2E_DEST_CONTEXT     the context to restore into (default: the source context)

Everything it writes lives in two fresh namespaces (`dr-e2e-<random>` and its `-restored`
twin, reached through the namespace remap), removed at the end; cluster-scoped artifacts are
not restored. These are the ONLY skips allowed in the suite: a missing upstream fixture or
an unreachable emulator fails, it never skips.

Run: DR_E2E_KUBECONFIG=~/.kube/config .venv/bin/python -m pytest -m e2e tests/kubernetes
"""

from __future__ import annotations

import os
import secrets

import kubernetes
import pyrage
import pytest

from dr.contract import ExportContext, OutcomeStatus, RestoreRequest
from dr.exporters.kubernetes import KubernetesExporter
from dr.repository.catalogs import read_catalog
from dr.repository.encryption import generate_identity
from dr.repository.reading import ArtifactReader
from dr.repository.repositories import Repository
from dr.repository.stores.local import LocalStore
from dr.repository.writing import SnapshotWriter

KUBECONFIG = os.environ.get("DR_E2E_KUBECONFIG")
pytestmark = [pytest.mark.e2e,
              pytest.mark.skipif(not KUBECONFIG, reason="DR_E2E_KUBECONFIG is not set: no real cluster to test against")]


def _contexts() -> tuple[str, str]:
    _, current = kubernetes.config.list_kube_config_contexts(KUBECONFIG)
    source = os.environ.get("DR_E2E_SOURCE_CONTEXT") or current["name"]
    return source, os.environ.get("DR_E2E_DEST_CONTEXT") or source


@pytest.fixture
def namespaces():
    source_ctx, dest_ctx = _contexts()
    name = f"dr-e2e-{secrets.token_hex(3)}"
    src = kubernetes.client.CoreV1Api(kubernetes.config.new_client_from_config(KUBECONFIG, context=source_ctx))
    dst = kubernetes.client.CoreV1Api(kubernetes.config.new_client_from_config(KUBECONFIG, context=dest_ctx))
    src.create_namespace({"metadata": {"name": name}})
    try:
        yield name, src, dst
    finally:
        src.delete_namespace(name)
        try:
            dst.delete_namespace(f"{name}-restored")
        except kubernetes.client.ApiException:
            pass


def _exporter(context: str, namespace: str) -> KubernetesExporter:
    options = KubernetesExporter.Options(kubeconfig=KUBECONFIG, context=context, namespaces=[namespace],
                                         page_size=2, include_groups=["dr-e2e.invalid"])
    return KubernetesExporter(ExportContext("e2e", options, base_dir="/"))


def test_round_trip_on_a_real_cluster(tmp_path, namespaces):
    name, src, dst = namespaces
    source_ctx, dest_ctx = _contexts()
    for i in range(5):  # page_size=2: the real server's pagination is used
        src.create_namespaced_config_map(name, {"metadata": {"name": f"cm-{i}"}, "data": {"i": str(i)}})
    src.create_namespaced_secret(name, {"metadata": {"name": "db"}, "string_data": {"pw": "e2e"}})

    identity, recipient = generate_identity()
    repo = Repository(LocalStore(str(tmp_path / "repo")))
    repo.init()
    writer = SnapshotWriter(repo, [recipient])
    sink = writer.source("e2e", "kubernetes")
    _exporter(source_ctx, name).export(sink)
    snapshot = writer.finish("e2e", [sink.commit()])
    writer.close()
    # Only this namespace's objects (and its Namespace object) go back: never cluster-scoped ones.
    artifacts = [a for a in read_catalog(repo, snapshot.catalog)
                 if a.meta.get("namespace") == name or a.identity == "namespaces"]

    reader = ArtifactReader(repo, [pyrage.x25519.Identity.from_str(identity)])
    request = RestoreRequest(to=f"{KUBECONFIG}:{dest_ctx}", remap={f"namespace:{name}": f"{name}-restored"})
    first = list(_exporter(source_ctx, name).restore(artifacts, reader, request))
    assert not [o for o in first if o.failed], [o.to_json() for o in first if o.failed]

    for i in range(5):
        restored = dst.read_namespaced_config_map(f"cm-{i}", f"{name}-restored").to_dict()
        original = src.read_namespaced_config_map(f"cm-{i}", name).to_dict()
        assert restored["data"] == original["data"]
    assert dst.read_namespaced_secret("db", f"{name}-restored").data == src.read_namespaced_secret("db", name).data

    second = list(_exporter(source_ctx, name).restore(artifacts, reader, request))
    assert {o.status for o in second} <= {OutcomeStatus.UNCHANGED, OutcomeStatus.SKIPPED}, \
        [o.to_json() for o in second if o.status != OutcomeStatus.UNCHANGED]
