"""Image references as runtimes read them, and where credentials come from (never printed)."""

from __future__ import annotations

import base64
import json

import pytest

from dr.exporters.images.references import BadReference, dr_path, parse, parse_pattern

DIGEST = "sha256:" + "ab" * 32


@pytest.mark.parametrize("text,host,path,tag,digest", [
    ("nginx", "docker.io", "library/nginx", "latest", None),
    ("nginx:1.25", "docker.io", "library/nginx", "1.25", None),
    ("bitnami/redis:7", "docker.io", "bitnami/redis", "7", None),
    ("localhost/app", "localhost", "app", "latest", None),
    ("reg.local:5000/team/app:v1", "reg.local:5000", "team/app", "v1", None),
    (f"reg.local/team/app@{DIGEST}", "reg.local", "team/app", None, DIGEST),
    (f"reg.local/team/app:v1@{DIGEST}", "reg.local", "team/app", "v1", DIGEST),
])
def test_references_are_read_as_container_runtimes_read_them(text, host, path, tag, digest):
    ref = parse(text)
    assert (ref.host, ref.path, ref.tag, ref.digest) == (host, path, tag, digest)


@pytest.mark.parametrize("text", ["reg.local/Team/app:1", "reg.local/app@sha256:short", "reg.local/app:bad tag"])
def test_bad_references_say_what_is_wrong(text):
    with pytest.raises(BadReference):
        parse(text)


def test_patterns_and_the_dr_repository_layout():
    pattern = parse_pattern("reg.local:5000/team/*:v*")
    assert pattern.matches_path("team/api") and not pattern.matches_path("other/api")
    assert pattern.matches_tag("v2") and not pattern.matches_tag("latest")
    assert parse_pattern("reg.local/team/*").tag_glob == "*"
    assert dr_path(parse("reg.local:5000/team/api:1"), "mirror") == "mirror/reg.local-5000/team/api"


def test_credentials_from_a_kubernetes_pull_secret_named_by_the_plan(tmp_path, registries, images):
    import kubernetes

    from tests.harness.kube import EmulatedCluster, write_kubeconfig
    from tests.images.conftest import PASSWORD, USER, backup, plan_with, source_result

    cluster = EmulatedCluster(name="pull-secrets").start()
    try:
        kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", {"source": cluster})
        token = base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
        config = json.dumps({"auths": {registries.dr_auth.host: {"auth": token}}}).encode()
        api = kubernetes.client.CoreV1Api(kubernetes.config.new_client_from_config(config_file=kubeconfig))
        api.create_namespaced_secret("default", {
            "metadata": {"name": "dr-push"}, "type": "kubernetes.io/dockerconfigjson",
            "data": {".dockerconfigjson": base64.b64encode(config).decode()}})
        options = {"to": [f"{registries.dr_auth.url}/from-secret"], "images": [images.api],
                   "kubeconfig": "kubeconfig", "pull_secrets": ["default/dr-push"]}
        result, records, _ = backup(plan_with(tmp_path, options))
        assert source_result(result).ok and list(records) == [images.api]
        result, _, _ = backup(plan_with(tmp_path, {**options, "pull_secrets": ["default/missing"]}))
        assert "pull secret default/missing: HTTP 404" in source_result(result).error
    finally:
        cluster.stop()
