"""Helm releases (their Secrets written with Helm's own encoding) on an emulated cluster pin the
charts they run, from a chart repository that lives in the failed domain. Without the helm
source the audit finds each a blocker; with it, exactly those charts are copied (not the whole
repository), the dependency is covered, and a chart the repository no longer has is a finding
naming its release."""

from __future__ import annotations

import json
import os

import pyrage

from dr.cli.exitcodes import Exit
from dr.cli.main import main
from dr.exporters.kubernetes.helm_releases import encode_release
from tests.harness import EmulatedCluster, write_kubeconfig
from tests.helm.conftest import backup, plan_with, source_result


def release_secret(repo: str, name: str, chart: str, version: str, revision: int = 1) -> dict:
    release = {"name": name, "namespace": "team-a", "version": revision,
               "info": {"status": "deployed", "description": "Install complete"},
               "chart": {"metadata": {"name": chart, "version": version, "appVersion": "1.16.0",
                                      "annotations": {"dr.io/chart-repo": repo}},
                         "templates": [], "values": {"replicaCount": 1}},
               "config": {"replicaCount": 3}, "manifest": "---\n"}
    return {"apiVersion": "v1", "kind": "Secret", "type": "helm.sh/release.v1",
            "metadata": {"name": f"sh.helm.release.v1.{name}.v{revision}", "namespace": "team-a",
                         "labels": {"name": name, "owner": "helm", "status": "deployed", "version": str(revision)}},
            "data": {"release": encode_release(release)}}


def _audit(tmp_path, name: str) -> list[dict]:
    out = tmp_path / f"{name}.json"
    main(["audit", "--plan", str(tmp_path / "plan.yaml"), "--failed", "cluster-a", "--json",
          "--out", str(out), "-q"])
    return json.loads(out.read_text())["findings"]


def _about(findings: list[dict], reference: str) -> list[tuple[str, str]]:
    return sorted((f["severity"], f["code"]) for f in findings if f.get("reference") == reference)


def test_the_release_charts_are_copied_exactly_and_covered(tmp_path, charts, capsys):
    repo = charts.http.url
    web, gone = f"{repo}/web:1.0.0", f"{repo}/api:9.9.9"
    cluster = EmulatedCluster(name="cluster-a").start()
    try:
        cluster.create_objects([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a"}},
                                release_secret(repo, "web", "web", "1.0.0"),
                                release_secret(repo, "api", "api", "9.9.9", revision=4)])
        kubeconfig = write_kubeconfig(os.path.join(tmp_path, "kubeconfig"), {"cluster-a": cluster})
        kube = {"name": "platform", "type": "kubernetes", "kubeconfig": kubeconfig, "context": "cluster-a"}
        identity = pyrage.x25519.Identity.generate()  # release Secrets are secret-class
        (tmp_path / "identity.txt").write_text(str(identity) + "\n")
        recipients = [str(identity.to_public())]
        in_cluster = [{"name": "in-cluster-charts", "domain": "cluster-a", "prefixes": [repo]}]

        # where the DR copy of the lost repository's charts goes in a restore: a directory
        remaps = [{"kind": "chart-repository", "old": repo, "new": "dr-charts"}]
        plan_with(tmp_path, {"from_plan": False}, extra_sources=[kube], locations=in_cluster,
                  recipients=recipients, remaps=remaps)
        assert main(["backup", "--plan", str(tmp_path / "plan.yaml"), "-q"]) in (Exit.OK, Exit.PARTIAL)
        before = _audit(tmp_path, "before")
        # each release pins its chart; the repository itself is no dependency of theirs
        assert _about(before, web) == _about(before, gone) == [("blocker", "registry-in-failed-domain")], before
        assert not _about(before, repo)

        helm = {"extra_sources": [kube], "locations": in_cluster, "recipients": recipients, "remaps": remaps}
        result, found, _ = backup(plan_with(tmp_path, {}, **helm))
        # a chart the repository no longer has fails the run: it is no recovery point (docs/format.md
        # section 9), so the audit judges the source from its newest good backup, which copied nothing
        during_failure = _audit(tmp_path, "failed-run")
        # the operator uninstalls the release whose chart is gone; the next run is a good backup
        cluster.dynamic_client().resources.get(api_version="v1", kind="Secret").delete(
            name="sh.helm.release.v1.api.v4", namespace="team-a")
        fixed, fixed_found, _ = backup(plan_with(tmp_path, {}, **helm))
        restored = _whole_plan_restore(tmp_path, capsys)
    finally:
        cluster.stop()
    # exactly the chart the release runs: not web 1.1.0, not the repository's other charts
    assert set(found) == {web}
    assert found[web].meta["provides"] == [web]
    assert found[web].meta["releases"] == [{"namespace": "team-a", "name": "web", "revision": 1}]
    # the chart the repository no longer has: an error naming its release; the other still copies
    charts_source = source_result(result)
    [missing] = [f for f in charts_source.findings if f["severity"] == "error"]
    assert (missing["code"], missing["chart"], missing["releases"]) == ("chart-missing", gone, ["team-a/api"])
    assert "helm release team-a/api v4" in missing["message"]
    assert not charts_source.good
    assert _about(during_failure, web) == _about(during_failure, gone) == [("blocker", "registry-in-failed-domain")]
    # the blocker says where the copy is and why it does not count; the chart never copied does not
    [copied_by_failed_run] = [f["message"] for f in during_failure if f.get("reference") == web]
    assert "but the run of charts there failed, so it is no recovery point" in copied_by_failed_run
    [never_copied] = [f["message"] for f in during_failure if f.get("reference") == gone]
    assert "no recovery point" not in never_copied
    [reported] = [f for f in during_failure if f["code"] == "backup-finding" and f.get("sources") == ["charts"]]
    assert "chart-missing" in reported["message"], reported

    assert source_result(fixed).good and set(fixed_found) == {web}
    after = _audit(tmp_path, "after")
    assert _about(after, web) == [("info", "dependency-remapped")], after
    assert not _about(after, gone)  # no release runs it any more

    # a whole-plan restore: the plan's chart-repository remap is the charts' destination
    copy = tmp_path / "dr-charts" / "web-1.0.0.tgz"
    [charts_step] = [step for step in restored["steps"] if step["name"] == "charts"]
    [destination] = charts_step["destinations"]
    assert destination["to"] == str(tmp_path / "dr-charts") and "chart-repository" in destination["how"]
    assert {s["step"]: s["status"] for s in restored["run"]["steps"]}["charts"] == "succeeded"
    assert copy.read_bytes() == (charts.packaged / "web-1.0.0.tgz").read_bytes()
    # each outcome says how to reinstall the release from the DR copy with its restored values
    capsys.readouterr()
    assert main(["restore", "--plan", str(tmp_path / "plan.yaml"), "--source", "charts", "--to",
                 str(tmp_path / "dr-charts"), "--json"]) == Exit.OK
    [outcome] = json.loads(capsys.readouterr().out)["outcomes"]
    assert (outcome["item"], outcome["status"]) == (web, "unchanged")
    assert (f"helm get values web -n team-a -o yaml > values-team-a-web.yaml && helm upgrade --install web "
            f"{copy} -n team-a -f values-team-a-web.yaml") in outcome["reason"]


def _whole_plan_restore(tmp_path, capsys) -> dict:
    capsys.readouterr()
    code = main(["restore", "--plan", str(tmp_path / "plan.yaml"), "--to", "platform=cluster-a",
                 "--identity", str(tmp_path / "identity.txt"), "--json"])
    out = capsys.readouterr().out
    assert code == Exit.OK, out
    return json.loads(out)
