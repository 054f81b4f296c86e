"""Charts in registries that need credentials, read and pushed with a login from a docker
config.json (`auth_file`): a distribution registry with htpasswd basic auth, and the bearer
token flow of the harness's proxy (its own token endpoint); a login from a docker credential
helper (a script on PATH); the order of the places a login is looked for (ECR: moto). A missing
or wrong login is a finding that says which, and never shows the password."""

from __future__ import annotations

import base64
import json
import os

import pytest

from dr.cli.exitcodes import Exit
from dr.cli.main import main
from dr.exporters.helm.logins import registry_logins, repository_logins
from tests.harness.registries import DistributionRegistry, RegistryProxy
from tests.helm.conftest import backup, plan_with, source_result

PASSWORD = "s3cret-Pa55"
BAD = "b4d-Passw0rd-q7"


@pytest.fixture(scope="module")
def locked():
    """(basic: an htpasswd registry, bearer: a token-demanding proxy in front of an open one)."""
    basic = DistributionRegistry(users={"dr": PASSWORD}, name="helm-basic").start()
    behind = DistributionRegistry(name="helm-behind").start()
    proxy = RegistryProxy(behind.host)
    proxy.bearer = ("dr", PASSWORD)
    try:
        yield basic, proxy
    finally:
        proxy.close()
        behind.stop()
        basic.stop()


def _auth_file(tmp_path, logins: dict[str, str]) -> str:
    auths = {host: {"auth": base64.b64encode(f"dr:{password}".encode()).decode()} for host, password in logins.items()}
    (tmp_path / "config.json").write_text(json.dumps({"auths": auths}))
    return "config.json"  # relative to the plan's folder


def _push_then_read(tmp_path, charts, capsys, host: str, password: str):
    """Restore the listed web chart into oci://host/pushed (a push), then back it up from there."""
    options = {"auth_file": _auth_file(tmp_path, {host: password}), "timeout_seconds": 5,
               "charts": [{"repo": charts.http.url, "name": "web", "version": "1.0.0"}]}
    plan_with(tmp_path, options)
    assert main(["backup", "--plan", str(tmp_path / "plan.yaml"), "-q"]) == Exit.OK
    capsys.readouterr()
    code = main(["restore", "--plan", str(tmp_path / "plan.yaml"), "--source", "charts", "--to",
                 f"oci://{host}/pushed", "--json"])
    pushed = json.loads(capsys.readouterr().out)["outcomes"]
    read = plan_with(tmp_path, {**options, "charts": [{"oci": f"oci://{host}/pushed/web", "version": "1.0.0"}]})
    return code, pushed, backup(read)


@pytest.mark.parametrize("flow", ["basic", "bearer"])
def test_a_login_from_auth_file_reads_and_pushes_charts(tmp_path, charts, capsys, locked, flow):
    host = locked[0].host if flow == "basic" else locked[1].host
    code, pushed, (result, found, reader) = _push_then_read(tmp_path, charts, capsys, host, PASSWORD)
    assert code == Exit.OK and [o["status"] for o in pushed] == ["restored"], pushed
    assert source_result(result).ok and not source_result(result).findings
    [chart] = found.values()
    assert reader.read(chart) == (charts.packaged / "web-1.0.0.tgz").read_bytes()


@pytest.mark.parametrize("flow", ["basic", "bearer"])
def test_a_wrong_or_missing_login_is_a_finding_that_says_which(tmp_path, charts, capsys, locked, flow):
    host = locked[0].host if flow == "basic" else locked[1].host
    code, pushed, (result, found, _) = _push_then_read(tmp_path, charts, capsys, host, BAD)
    assert code != Exit.OK and [o["status"] for o in pushed] == ["failed"]
    assert f"{host} refused the login for it in auth_file" in pushed[0]["reason"]
    source = source_result(result)
    assert not source.ok and found == {}
    [finding] = source.findings
    assert finding["code"] == "chart-unavailable" and f"{host} refused the login" in finding["message"]
    shown = json.dumps(source.findings) + json.dumps(pushed) + capsys.readouterr().err
    assert BAD not in shown and base64.b64encode(f"dr:{BAD}".encode()).decode() not in shown

    (tmp_path / "config.json").write_text(json.dumps({"auths": {}}))  # no login for the host
    result, _, _ = backup(plan_with(tmp_path, {"auth_file": "config.json", "timeout_seconds": 5, "charts": [
        {"oci": f"oci://{host}/pushed/web", "version": "1.0.0"}]}))
    [finding] = source_result(result).findings
    assert f"{host} needs credentials (auth_file" in finding["message"] and "has no login for it" in finding["message"]


def _credential_helper(tmp_path, monkeypatch, host: str, password: str) -> None:
    """docker's config (DOCKER_CONFIG) names `docker-credential-drtest` for `host`: a script on
    PATH answering `get` as docker's helpers do, for that host only. No other login anywhere."""
    folder = tmp_path / "bin"
    folder.mkdir(exist_ok=True)
    answer = json.dumps({"ServerURL": host, "Username": "dr", "Secret": password})
    helper = folder / "docker-credential-drtest"
    helper.write_text(f"#!/bin/sh\n[ \"$1\" = get ] || exit 1\nread asked\n[ \"$asked\" = \"{host}\" ] || exit 1\n"
                      f"echo '{answer}'\n")
    helper.chmod(0o755)
    docker = tmp_path / "docker"
    docker.mkdir(exist_ok=True)
    (docker / "config.json").write_text(json.dumps({"credHelpers": {host: "drtest"}}))
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ.get('PATH', '')}")
    monkeypatch.setenv("DOCKER_CONFIG", str(docker))
    monkeypatch.setenv("HELM_REGISTRY_CONFIG", str(tmp_path / "no-helm-registry-config.json"))
    monkeypatch.delenv("REGISTRY_AUTH_FILE", raising=False)


def test_a_docker_credential_helper_gives_the_login_for_an_oci_chart(tmp_path, charts, capsys, locked, monkeypatch):
    host = locked[0].host  # htpasswd: nothing is read without the login
    code, pushed, _ = _push_then_read(tmp_path, charts, capsys, host, PASSWORD)  # pushed with auth_file
    assert code == Exit.OK and pushed[0]["status"] in ("restored", "unchanged"), pushed  # (or by a test before)
    _credential_helper(tmp_path, monkeypatch, host, PASSWORD)
    fresh = tmp_path / "no-auth-file"
    fresh.mkdir()
    result, found, reader = backup(plan_with(fresh, {"timeout_seconds": 5, "charts": [
        {"oci": f"oci://{host}/pushed/web", "version": "1.0.0"}]}))  # no auth_file: the helper's login
    assert source_result(result).ok and not source_result(result).findings
    [chart] = found.values()
    assert reader.read(chart) == (charts.packaged / "web-1.0.0.tgz").read_bytes()


def test_a_login_from_a_credential_helper_that_is_refused_names_the_helper(tmp_path, charts, locked, monkeypatch):
    host = locked[0].host
    _credential_helper(tmp_path, monkeypatch, host, BAD)
    result, found, _ = backup(plan_with(tmp_path, {"timeout_seconds": 5, "charts": [
        {"oci": f"oci://{host}/pushed/web", "version": "1.0.0"}]}))
    [finding] = source_result(result).findings
    assert found == {} and finding["code"] == "chart-unavailable"
    assert f"{host} refused the login for it in {tmp_path / 'docker' / 'config.json'} (its credential helper " \
           "docker-credential-drtest)" in finding["message"]
    assert BAD not in json.dumps(finding)


def test_the_login_order_auth_file_then_helm_then_docker_then_ecr(tmp_path, monkeypatch):
    """OCI registries: the plan's auth_file, helm's registry config, docker's config, ECR; HTTP
    chart repositories: auth_file alone."""
    from moto import mock_aws

    def config(name: str, user: str) -> str:
        (tmp_path / name).write_text(json.dumps({"auths": {"reg.local": {"username": user, "password": "p"}}}))
        return str(tmp_path / name)

    monkeypatch.setenv("HELM_REGISTRY_CONFIG", config("helm.json", "from-helm"))
    monkeypatch.setenv("REGISTRY_AUTH_FILE", config("docker.json", "from-docker"))
    monkeypatch.setenv("DOCKER_CONFIG", str(tmp_path / "nowhere"))
    assert registry_logins(config("plan.json", "from-plan")).for_host("reg.local").username == "from-plan"
    assert registry_logins(None).for_host("reg.local").username == "from-helm"
    monkeypatch.setenv("HELM_REGISTRY_CONFIG", str(tmp_path / "none.json"))
    assert registry_logins(None).for_host("reg.local").username == "from-docker"
    assert repository_logins(None).for_host("reg.local") is None
    for name, value in (("AWS_ACCESS_KEY_ID", "testing"), ("AWS_SECRET_ACCESS_KEY", "testing")):
        monkeypatch.setenv(name, value)
    ecr = "123456789012.dkr.ecr.us-east-1.amazonaws.com"
    with mock_aws():
        token = registry_logins(None).for_host(ecr)
        assert repository_logins(None).for_host(ecr) is None
    assert token is not None and token.username == "AWS" and token.password and token.source.startswith("ECR")
