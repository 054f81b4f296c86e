"""The kubeconfig resolver (dr.kits.kubeconfigs) follows kubectl's rules, against emulated clusters.

A $KUBECONFIG list is merged: for each cluster, context and user name the first file that
defines it wins, and current-context comes from the first file that sets it. An explicit file
is read alone; with nothing at all, the in-cluster account is asked for (and its absence named).
"""

import os

import kubernetes.client
import pytest
import yaml

from dr.kits.kubeconfigs import merge, resolve
from dr.exporters.kubernetes.connecting import ConnectionFailure, api_client


def _write(path, document) -> str:
    with open(path, "w") as handle:
        yaml.safe_dump(document, handle)
    return str(path)


def _user(name):
    return {"name": name, "user": {"token": "emulated-token"}}


@pytest.fixture
def two_files(tmp_path, source, dest):
    """First file: cluster `shared` (the source), current-context `second-ctx` (defined in the second
    file only). Second file: the context, a `shared` cluster pointing at dest (must lose), and a
    current-context of its own (must lose)."""
    first = _write(tmp_path / "first.yaml", {
        "apiVersion": "v1", "kind": "Config", "current-context": "second-ctx",
        "clusters": [{"name": "shared", "cluster": {"server": source.url}}], "users": [_user("u")]})
    os.mkdir(tmp_path / "second")
    second = _write(tmp_path / "second" / "config", {
        "apiVersion": "v1", "kind": "Config", "current-context": "dest-ctx",
        "clusters": [{"name": "shared", "cluster": {"server": dest.url}},
                     {"name": "d", "cluster": {"server": dest.url, "certificate-authority": "ca.crt"}}],
        "contexts": [{"name": "second-ctx", "context": {"cluster": "shared", "user": "u"}},
                     {"name": "dest-ctx", "context": {"cluster": "d", "user": "u"}}],
        "users": [_user("u")]})
    return first, second


def _namespaces(client) -> set[str]:
    return {n.metadata.name for n in kubernetes.client.CoreV1Api(client).list_namespace().items}


def test_a_kubeconfig_list_is_merged_the_way_kubectl_merges_it(monkeypatch, two_files, source, dest):
    first, second = two_files
    monkeypatch.setenv("KUBECONFIG", os.pathsep.join([first, str(first) + ".missing", second]))
    kubernetes.client.CoreV1Api(dest.api_client()).create_namespace({"metadata": {"name": "only-in-dest"}})
    with api_client(None, None, pool_size=2) as client:
        assert client.configuration.host == source.url  # `shared` from the first file
        seen = _namespaces(client)  # through the context that only the second file defines
    assert "only-in-dest" not in seen and seen == _namespaces(source.api_client())
    with api_client(None, "dest-ctx", pool_size=2) as client:  # --context picks the second file's
        assert client.configuration.host == dest.url and "only-in-dest" in _namespaces(client)


def test_relative_paths_resolve_against_the_file_that_holds_them(two_files):
    first, second = two_files
    merged = merge([yaml.safe_load(open(p)) | {"__file__": p} for p in (first, second)])
    [d] = [c for c in merged["clusters"] if c["name"] == "d"]
    assert d["cluster"]["certificate-authority"] == os.path.join(os.path.dirname(second), "ca.crt")
    assert merged["current-context"] == "second-ctx"


def test_an_explicit_file_is_read_alone(monkeypatch, two_files, dest):
    first, second = two_files
    monkeypatch.setenv("KUBECONFIG", first)
    with api_client(second, None, pool_size=2) as client:  # its own current-context, dest-ctx
        assert client.configuration.host == dest.url
    with pytest.raises(ConnectionFailure, match=r"first\.yaml \(context current\)"):
        api_client(None, None, pool_size=2)  # first alone: second-ctx is defined nowhere


def test_with_no_kubeconfig_the_in_cluster_account_is_asked_for(monkeypatch, tmp_path):
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "absent"))
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    assert resolve(None, None).config is None
    with pytest.raises(ConnectionFailure, match="in-cluster service account"):
        api_client(None, None, pool_size=2)
