"""`dr audit --live`: what exists at the sources now but the audited snapshot does not hold.

Real backups (dr backup through dr's entry point, or the kubernetes exporter against an
emulated API server), then a change at the source, then the audit with and without --live.
"""

from __future__ import annotations

import json
import os

import pytest
import yaml

from dr.cli.exitcodes import Exit
from dr.cli.main import main


def _plan(root, sources: list[dict]) -> str:
    data = {
        "version": 1, "name": "coverage",
        "failure_domains": [{"name": "site-a", "kind": "region"}, {"name": "site-b", "kind": "region"}],
        "locations": [{"name": "local", "domain": "site-b", "kind": "secret-store", "prefixes": ["/"]},
                      {"name": "img", "domain": "site-b", "kind": "registry", "hosts": ["ghcr.io"]}],
        "protects_against": ["site-a"],
        "targets": [{"name": "dr", "url": str(root / "repo"), "domain": "site-b",
                     "credentials_location": str(root)}],
        "dr_image": "ghcr.io/acme/dr:1",
        "sources": sources,
    }
    path = root / "plan.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return str(path)


@pytest.fixture
def dr():
    return main


def _audit(dr, capsys, plan: str, *extra: str) -> tuple[int, dict]:
    capsys.readouterr()
    code = dr(["audit", "--plan", plan, "--json", *extra])
    return code, json.loads(capsys.readouterr().out)


def _coverage(document: dict) -> list[dict]:
    return [f for f in document["findings"] if f["code"] in ("not-backed-up", "coverage-unknown")]


@pytest.fixture
def backed_up_files(tmp_path, dr, capsys):
    data = tmp_path / "data"
    (data / "sub").mkdir(parents=True)
    (data / "a.txt").write_text("a")
    (data / "sub" / "b.txt").write_text("b")
    plan = _plan(tmp_path, [{"name": "data", "type": "files", "paths": ["data"], "rpo": "1h"}])
    assert dr(["backup", "--plan", plan]) == Exit.OK, capsys.readouterr()
    return tmp_path, plan


def test_nothing_new_means_no_coverage_finding(dr, capsys, backed_up_files):
    _, plan = backed_up_files
    code, document = _audit(dr, capsys, plan, "--live")
    assert code == Exit.OK
    assert _coverage(document) == []


def test_a_file_created_after_the_backup_is_not_backed_up(dr, capsys, backed_up_files):
    root, plan = backed_up_files
    (root / "data" / "sub" / "new.txt").write_text("new data")
    code, document = _audit(dr, capsys, plan, "--live")
    assert code == Exit.OK  # a warning by default
    found = _coverage(document)
    assert [(f["code"], f["severity"], f["kind"], f["reference"], f["sources"]) for f in found] == [
        ("not-backed-up", "warning", "file", "data/sub/new.txt", ["data"])]
    assert found[0]["artifact"] == "data/file/data/sub/new.txt"
    assert "dr backup --plan PLAN --source data" in found[0]["action"]
    assert found[0]["runbook"] == "runbooks/not-backed-up.md"


def test_without_live_no_exporter_runs_and_nothing_is_reported(dr, capsys, backed_up_files):
    root, plan = backed_up_files
    (root / "data" / "new.txt").write_text("new")
    code, document = _audit(dr, capsys, plan)
    assert code == Exit.OK
    assert _coverage(document) == []


def test_strict_makes_not_backed_up_a_blocker_exit_4(dr, capsys, backed_up_files):
    root, plan = backed_up_files
    (root / "data" / "new.txt").write_text("new")
    code, document = _audit(dr, capsys, plan, "--live", "--strict")
    assert code == Exit.BLOCKERS == 4
    assert [(f["code"], f["severity"]) for f in _coverage(document)] == [("not-backed-up", "blocker")]


def test_a_new_backup_clears_the_finding(dr, capsys, backed_up_files):
    root, plan = backed_up_files
    (root / "data" / "new.txt").write_text("new")
    assert dr(["backup", "--plan", plan]) == Exit.OK
    code, document = _audit(dr, capsys, plan, "--live", "--strict")
    assert code == Exit.OK
    assert _coverage(document) == []


def test_many_missing_items_are_folded(dr, capsys, backed_up_files):
    root, plan = backed_up_files
    for i in range(60):
        (root / "data" / f"n{i:02}.txt").write_text("x")
    _, document = _audit(dr, capsys, plan, "--live")
    found = _coverage(document)
    assert len(found) == 51
    folded = [f for f in found if f["kind"] == "source"]
    assert len(folded) == 1 and folded[0]["artifacts_affected"] == 10 and len(folded[0]["examples"]) == 5


def test_a_failing_discovery_is_coverage_unknown_and_redacted(dr, capsys, backed_up_files, monkeypatch):
    _, plan = backed_up_files
    from dr.exporters.files import FilesExporter

    def broken(self):
        raise OSError("cannot reach https://admin:hunter2@files.example.com/share")
        yield  # pragma: no cover

    monkeypatch.setattr(FilesExporter, "discover", broken)
    code, document = _audit(dr, capsys, plan, "--live", "--strict")
    assert code == Exit.OK  # unknown coverage is a warning, even under --strict
    found = _coverage(document)
    assert [(f["code"], f["severity"], f["reference"]) for f in found] == [("coverage-unknown", "warning", "data")]
    assert "cannot reach" in found[0]["message"] and "hunter2" not in found[0]["message"]


def _backed_up_cluster(dr, capsys, tmp_path, cluster) -> str:
    """A plan with one kubernetes source reading `cluster`, backed up once; its path."""
    from tests.harness import write_kubeconfig

    kubeconfig = write_kubeconfig(os.path.join(tmp_path, "kubeconfig"), {"source": cluster}, current="source")
    plan = _plan(tmp_path, [{"name": "cluster", "type": "kubernetes", "kubeconfig": kubeconfig,
                             "context": "source", "rpo": "1h"}])
    assert dr(["backup", "--plan", plan]) == Exit.OK, capsys.readouterr()
    return plan


def test_a_namespace_created_after_the_backup_is_not_backed_up(dr, capsys, tmp_path):
    from tests.harness import EmulatedCluster

    cluster = EmulatedCluster(name="source").start()
    try:
        cluster.create_objects([
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a"}},
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings", "namespace": "team-a"},
             "data": {"k": "v"}}])
        plan = _backed_up_cluster(dr, capsys, tmp_path, cluster)
        code, document = _audit(dr, capsys, plan, "--live")
        assert _coverage(document) == [], _coverage(document)
        cluster.create_objects([
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-b"}},
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings", "namespace": "team-b"},
             "data": {"k": "v"}}])
        code, document = _audit(dr, capsys, plan, "--live")
    finally:
        cluster.stop()
    found = _coverage(document)
    assert found and all(f["code"] == "not-backed-up" and f["sources"] == ["cluster"] for f in found)
    # per object (one finding per type, naming the objects): everything new is in team-b
    assert all(f["examples"] and all("team-b" in e for e in f["examples"]) for f in found), found
    assert "cluster/configmaps/team-b/settings" in {e for f in found for e in f["examples"]}
    assert "cluster/namespaces/team-b" in {e for f in found for e in f["examples"]}


def test_per_object_coverage_reports_new_changed_and_deleted_objects(dr, capsys, tmp_path):
    """The usual way a platform grows: a new ResourceFlavor, a new object in a namespace already
    backed up, an edited object, a deleted one. Each is named, with a count and the first few."""
    import kubernetes

    from tests.harness import EmulatedCluster
    from tests.kubernetes.upstream import upstream, wait_established

    def configmap(name: str) -> dict:
        return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "team-a"},
                "data": {"k": "v"}}

    cluster = EmulatedCluster(name="source").start()
    try:
        crds = upstream("kueue/crds/kueue.x-k8s.io_resourceflavors.yaml")
        cluster.create_objects(crds)
        wait_established(cluster, crds)
        cluster.create_objects([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a"}},
                                configmap("settings"), configmap("old"), configmap("edited")]
                               + upstream("kueue/examples/admin_resource-flavor-empty.yaml"))
        plan = _backed_up_cluster(dr, capsys, tmp_path, cluster)
        code, document = _audit(dr, capsys, plan, "--live")
        assert _objects(document) == [], _objects(document)

        cluster.create_objects([configmap(f"new-{i}") for i in range(7)] + [
            {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ResourceFlavor", "metadata": {"name": "spot"}}])
        core = kubernetes.client.CoreV1Api(cluster.api_client())
        core.patch_namespaced_config_map("edited", "team-a", {"data": {"k": "changed"}})
        core.delete_namespaced_config_map("old", "team-a")
        code, document = _audit(dr, capsys, plan, "--live")
        strict, _ = _audit(dr, capsys, plan, "--live", "--strict")
    finally:
        cluster.stop()
    found = {(f["code"], f["reference"]): f for f in _objects(document)}
    assert set(found) == {("not-backed-up", "cluster: configmaps"),
                          ("not-backed-up", "cluster: resourceflavors.kueue.x-k8s.io"),
                          ("changed-since-backup", "cluster: configmaps"),
                          ("deleted-since-backup", "cluster: configmaps")}, set(found)
    new = found[("not-backed-up", "cluster: configmaps")]
    assert new["severity"] == "warning" and new["artifacts_affected"] == 7 and len(new["examples"]) == 5
    assert new["examples"][0] == "cluster/configmaps/team-a/new-0" and "and 2 more" in new["message"]
    assert new["kind"] == "ConfigMap" and new["runbook"] == "runbooks/not-backed-up.md"
    flavor = found[("not-backed-up", "cluster: resourceflavors.kueue.x-k8s.io")]
    assert flavor["examples"] == ["cluster/resourceflavors.kueue.x-k8s.io/spot"]
    changed = found[("changed-since-backup", "cluster: configmaps")]
    assert (changed["severity"], changed["examples"]) == ("info", ["cluster/configmaps/team-a/edited"])
    assert changed["runbook"] == "runbooks/changed-since-backup.md"
    deleted = found[("deleted-since-backup", "cluster: configmaps")]
    assert (deleted["severity"], deleted["examples"]) == ("warning", ["cluster/configmaps/team-a/old"])
    assert code == Exit.OK and strict == Exit.BLOCKERS  # new objects block under --strict


def _objects(document: dict) -> list[dict]:
    codes = ("not-backed-up", "changed-since-backup", "deleted-since-backup", "coverage-unknown")
    return [f for f in document["findings"] if f["code"] in codes]
