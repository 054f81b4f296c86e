"""Charts in registries that need credentials, read and pushed with a login from a docker
config.json (`auth_file`): a distribution registry with htpasswd basic auth, and the bearer
token flow of the harness's proxy (its own token endpoint). A missing or wrong login is a
finding that says which, and never shows the password."""

from __future__ import annotations

import base64
import json

import pytest

from dr.cli.exitcodes import Exit
from dr.cli.main import main
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
