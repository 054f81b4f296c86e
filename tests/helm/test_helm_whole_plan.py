"""A Helm release (its Secret written with Helm's own encoding) on an emulated cluster names its
chart repository, which lives in the failed domain. Without the helm source the audit finds
that a blocker; with it, the repository's charts are copied and the dependency is covered."""

from __future__ import annotations

import json
import os

import pyrage

from dr.cli.exitcodes import Exit
from dr.cli.main import main
from dr.exporters.kubernetes.helm_releases import encode_release
from tests.harness import EmulatedCluster, write_kubeconfig
from tests.helm.conftest import backup, plan_with, source_result


def _release_secret(repo: str) -> dict:
    release = {"name": "web", "namespace": "team-a", "version": 1,
               "info": {"status": "deployed", "description": "Install complete"},
               "chart": {"metadata": {"name": "web", "version": "1.0.0", "appVersion": "1.16.0",
                                      "annotations": {"dr.io/chart-repo": repo}},
                         "templates": [], "values": {"replicaCount": 1}},
               "config": {"replicaCount": 3}, "manifest": "---\n"}
    return {"apiVersion": "v1", "kind": "Secret", "type": "helm.sh/release.v1",
            "metadata": {"name": "sh.helm.release.v1.web.v1", "namespace": "team-a",
                         "labels": {"name": "web", "owner": "helm", "status": "deployed", "version": "1"}},
            "data": {"release": encode_release(release)}}


def _audit(tmp_path, name: str) -> list[dict]:
    out = tmp_path / f"{name}.json"
    main(["audit", "--plan", str(tmp_path / "plan.yaml"), "--failed", "cluster-a", "--format", "json",
          "--out", str(out), "-q"])
    return json.loads(out.read_text())["findings"]


def test_the_release_chart_repository_is_covered_once_the_helm_source_copies_it(tmp_path, charts):
    cluster = EmulatedCluster(name="cluster-a").start()
    try:
        cluster.create_objects([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a"}},
                                _release_secret(charts.http.url)])
        kubeconfig = write_kubeconfig(os.path.join(tmp_path, "kubeconfig"), {"cluster-a": cluster})
        kube = {"name": "platform", "type": "kubernetes", "kubeconfig": kubeconfig, "context": "cluster-a"}
        recipients = [str(pyrage.x25519.Identity.generate().to_public())]  # release Secrets are secret-class
        in_cluster = [{"name": "in-cluster-charts", "domain": "cluster-a", "prefixes": [charts.http.url]}]

        plan_with(tmp_path, {"from_plan": False}, extra_sources=[kube], locations=in_cluster,
                  recipients=recipients)
        assert main(["backup", "--plan", str(tmp_path / "plan.yaml"), "-q"]) in (Exit.OK, Exit.PARTIAL)
        before = _audit(tmp_path, "before")
        assert [f["severity"] for f in before if charts.http.url in json.dumps(f)] == ["blocker"], before

        result, found, _ = backup(plan_with(tmp_path, {}, extra_sources=[kube], locations=in_cluster,
                                            recipients=recipients))
    finally:
        cluster.stop()
    charts_source = source_result(result)
    assert charts_source.ok and not [f for f in charts_source.findings if f["severity"] == "error"]
    # the whole repository the release installed from: every version of every chart in it
    assert {i for i in found if i != charts.http.url} == {
        f"{charts.http.url}/web:1.0.0", f"{charts.http.url}/web:1.1.0", f"{charts.http.url}/api:0.1.0"}
    assert found[charts.http.url].meta["provides"] == [charts.http.url]
    after = _audit(tmp_path, "after")
    assert not [f for f in after if f["severity"] == "blocker" and charts.http.url in json.dumps(f)], after
