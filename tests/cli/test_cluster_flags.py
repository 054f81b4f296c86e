"""--kubeconfig and --context (issue 31): global options over the plan's kubeconfig and context
options of every source that reads a cluster, which win over KUBECONFIG and ~/.kube/config.
Against the kmock emulator (tests/harness): a kubeconfig with two contexts, one of them the
emulator and the other a closed port, so only the context the precedence picks can succeed."""

from __future__ import annotations

import json
import socket

import pytest
import yaml

from dr.cli.exitcodes import Exit
from dr.cli.main import main
from dr.repository.encryption import generate_identity
from tests.cli.planfiles import local_target, write_plan
from tests.harness.kube import EmulatedCluster

CONFIG_MAP = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings", "namespace": "team-a"},
              "data": {"mode": "fast"}}


@pytest.fixture(scope="module")
def live():
    cluster = EmulatedCluster(name="live").start()
    try:
        cluster.create_objects([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a"}},
                                CONFIG_MAP])
        yield cluster
    finally:
        cluster.stop()


def _closed_port() -> str:
    with socket.socket() as probe:  # bound, then released: nothing listens there
        probe.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{probe.getsockname()[1]}"


def _kubeconfig(path, servers: dict[str, str], current: str) -> str:
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": current,
        "clusters": [{"name": n, "cluster": {"server": url}} for n, url in servers.items()],
        "users": [{"name": n, "user": {"token": "emulated-token"}} for n in servers],
        "contexts": [{"name": n, "context": {"cluster": n, "user": n}} for n in servers]}))
    return str(path)


@pytest.fixture
def two(tmp_path, live) -> str:
    """Contexts `live` (the emulator) and `dead` (a closed port), `dead` the current one."""
    return _kubeconfig(tmp_path / "two.yaml", {"live": live.url, "dead": _closed_port()}, current="dead")


def _plan(tmp_path, options: str = "") -> str:
    _, recipient = generate_identity()
    source = f"  - name: cluster\n    type: kubernetes\n    namespaces: [team-a]\n{options}"
    return write_plan(tmp_path / "plan.yaml", local_target(tmp_path / "repo"), source, [recipient])


def _backup(capsys, argv: list[str]) -> tuple[int, dict]:
    code = main([*argv, "--json"])
    [source] = json.loads(capsys.readouterr().out)["results"][0]["sources"]
    return code, source


def test_the_flags_win_over_kubeconfig_env_and_its_current_context(tmp_path, two, capsys, monkeypatch):
    monkeypatch.setenv("KUBECONFIG", two)
    plan = _plan(tmp_path)
    code, source = _backup(capsys, ["backup", "--plan", plan])
    assert code != Exit.OK and source.get("error")  # KUBECONFIG's current context: the closed port
    code, source = _backup(capsys, ["--context", "live", "backup", "--plan", plan])
    assert code == Exit.OK and not source.get("error"), source
    assert source["artifacts"] >= 2  # the namespace and its ConfigMap, at least


def test_the_flags_win_over_the_plans_options_each_its_own(tmp_path, two, capsys, monkeypatch):
    monkeypatch.delenv("KUBECONFIG", raising=False)
    dead_only = _kubeconfig(tmp_path / "dead.yaml", {"dead": _closed_port()}, current="dead")
    plan = _plan(tmp_path, f"    kubeconfig: {dead_only}\n    context: dead\n")
    code, source = _backup(capsys, ["backup", "--plan", plan, "--kubeconfig", two])
    assert code != Exit.OK and source.get("error")  # --kubeconfig alone keeps the plan's context
    code, source = _backup(capsys, ["backup", "--plan", plan, "--kubeconfig", two, "--context", "live"])
    assert code == Exit.OK and not source.get("error"), source

    # a restore's --to context is looked up in the flag's kubeconfig, not in the plan's
    restore = ["restore", "--plan", plan, "--source", "cluster", "--to", "live", "--json"]
    assert main(restore) == Exit.FAILURE
    assert "live" in json.loads(capsys.readouterr().out)["outcomes"][-1]["reason"]
    assert main([*restore, "--kubeconfig", two]) == Exit.OK
    counts = json.loads(capsys.readouterr().out)["counts"]
    assert counts["unchanged"] >= 2, counts  # it read the live cluster: what it holds is the backup


def test_audit_live_discovers_through_the_flags(tmp_path, two, capsys, monkeypatch):
    monkeypatch.delenv("KUBECONFIG", raising=False)
    plan = _plan(tmp_path, "    context: dead\n")
    assert main(["backup", "--plan", plan, "--kubeconfig", two, "--context", "live", "-q"]) == Exit.OK
    capsys.readouterr()
    audits = {}
    for flags in ([], ["--context", "live"]):
        main(["audit", "--plan", plan, "--live", "--json", "--kubeconfig", two, *flags])
        audits[bool(flags)] = {f["code"] for f in json.loads(capsys.readouterr().out)["findings"]}
    assert "coverage-unknown" in audits[False]  # the plan's context: the closed port
    assert "coverage-unknown" not in audits[True], audits[True]


def test_the_demo_takes_kubeconfig_but_refuses_a_context_it_would_ignore(tmp_path, capsys):
    assert main(["demo", "--dir", str(tmp_path / "demo"), "--context", "live"]) == Exit.USAGE
    assert "'cluster-a' and 'recovery'" in capsys.readouterr().err and not (tmp_path / "demo").exists()
