"""A snapshot that holds the plan itself is a warning (docs/format.md 8.1, the caveat).

The key of sealed names is derived from the plan's recipients: a source that backs up the plan
puts that key into the repository. `dr backup` records `plan-in-snapshot` (kept in the manifest,
the backup exits 0) and `dr audit` reports it with its runbook: for the plan's file in a
`files` source (not when excluded), for a `git` source of the plan's own repository, and for
a `kubernetes` source that exports the ConfigMap `dr deploy render` makes (kmock emulator).
"""

from __future__ import annotations

import json
import os
import subprocess

from dr.exporters.kubernetes.exporter import PLAN_CONFIGMAP
from dr.cli.main import main
from dr.deploy import objects
from tests.cli.planfiles import files_source, key_pair, local_target, write_plan
from tests.harness import EmulatedCluster, write_kubeconfig


def _warned(plan: str, capsys) -> list[dict]:
    """The plan-in-snapshot findings of `dr backup --json` (exit 0: a warning), then of `dr audit`."""
    assert main(["backup", "--plan", plan, "--json"]) == 0
    [source] = json.loads(capsys.readouterr().out)["results"][0]["sources"]
    found = [f for f in source.get("findings", []) if f["code"] == "plan-in-snapshot"]
    main(["audit", "--plan", plan, "--format", "json"])
    audited = [f for f in json.loads(capsys.readouterr().out)["findings"] if f["code"] == "plan-in-snapshot"]
    assert [(f["reference"], f["runbook"]) for f in audited] == \
        [(f["object"], "runbooks/plan-in-snapshot.md") for f in found]
    return found


def _plan(tmp_path, source: str) -> str:
    _, recipient = key_pair(tmp_path)
    return write_plan(tmp_path / "conf" / "plan.yaml", local_target(tmp_path / "repo"), source, [recipient])


def test_a_files_source_holding_the_plan_warns_until_it_is_excluded(tmp_path, capsys):
    conf = tmp_path / "conf"
    conf.mkdir()
    (conf / "other.txt").write_text("kept\n")
    plan = _plan(tmp_path, files_source("configs", [str(conf)]))
    [found] = _warned(plan, capsys)
    assert found["severity"] == "warning" and found["object"] == "conf/plan.yaml"
    assert "source configs" in found["message"] and "exclude" in found["message"]
    plan = _plan(tmp_path, files_source("configs", [str(conf)]) + '    exclude: ["plan.yaml"]\n')
    assert _warned(plan, capsys) == []


def test_a_secret_files_source_encrypts_the_plan_and_does_not_warn(tmp_path, capsys):
    (tmp_path / "conf").mkdir()
    plan = _plan(tmp_path, files_source("configs", [str(tmp_path / "conf")], secret=True))
    assert _warned(plan, capsys) == []


def test_a_git_source_of_the_plans_own_repository_warns(tmp_path, capsys):
    conf = tmp_path / "conf"
    conf.mkdir()
    source = f'  - name: declarations\n    type: git\n    repositories: [{{name: platform, url: "{conf}"}}]\n'
    plan = _plan(tmp_path, source)
    for args in (["init", "-q"], ["add", "plan.yaml"], ["-c", "user.name=t", "-c", "user.email=t@e", "commit", "-qm", "plan"]):
        subprocess.run(["git", *args], cwd=conf, check=True)
    [found] = _warned(plan, capsys)
    assert found["object"] == "platform" and "Git repository that holds the plan" in found["message"]
    remote = tmp_path / "remote.git"  # the plan's work tree is a clone: the source names its remote
    subprocess.run(["git", "clone", "-q", "--bare", str(conf), str(remote)], check=True)
    subprocess.run(["git", "remote", "add", "origin", str(remote)], cwd=conf, check=True)
    source = f'  - name: declarations\n    type: git\n    repositories: [{{name: upstream, url: "{remote}"}}]\n'
    assert [f["object"] for f in _warned(_plan(tmp_path, source), capsys)] == ["upstream"]


def test_a_kubernetes_source_exporting_the_rendered_plan_configmap_warns(tmp_path, capsys):
    assert PLAN_CONFIGMAP == objects.PLAN_CONFIGMAP  # the name dr deploy render gives it
    cluster = EmulatedCluster(name="source").start()
    try:
        cluster.create_objects([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "dr-system"}},
                                objects.plan_configmap("dr-system", "version: 1\n").obj])
        kubeconfig = write_kubeconfig(os.path.join(tmp_path, "kubeconfig"), {"source": cluster})
        source = (f'  - name: cluster\n    type: kubernetes\n    kubeconfig: "{kubeconfig}"\n'
                  '    context: source\n    namespaces: [dr-system]\n')
        [found] = _warned(_plan(tmp_path, source), capsys)
    finally:
        cluster.stop()
    assert found["object"] == "configmaps/dr-system/dr-plan" and "ConfigMap" in found["message"]
