"""The issue's "done when" with the real kubernetes exporter (on the emulated API server) and
real registries: the Deployment's image lives only in the failed cluster's registry; the images
source copies it; the audit has no blocker left for it; a whole-plan restore into the recovery
cluster creates the Deployment pointing at the DR copy, by digest."""

from __future__ import annotations

import json

import kubernetes
import pytest
import yaml

from dr.cli.exitcodes import Exit
from dr.cli.main import main
from tests.harness import EmulatedCluster, write_kubeconfig


def _deployment(image: str) -> dict:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "api", "namespace": "serving"},
            "spec": {"selector": {"matchLabels": {"app": "api"}},
                     "template": {"metadata": {"labels": {"app": "api"}},
                                  "spec": {"containers": [{"name": "api", "image": image}]}}}}


@pytest.fixture
def clusters(tmp_path, images):
    source, dest = EmulatedCluster(name="source").start(), EmulatedCluster(name="dest").start()
    try:
        source.create_objects([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "serving"}},
                               _deployment(images.api)])
        yield write_kubeconfig(tmp_path / "kubeconfig", {"source": source, "dest": dest})
    finally:
        source.stop()
        dest.stop()


def _plan(tmp_path, registries, kubeconfig: str) -> str:
    data = {"version": 1, "name": "serving",
            "failure_domains": [{"name": "cluster-a", "kind": "cluster"}, {"name": "dr-site", "kind": "site"}],
            "protects_against": ["cluster-a"],
            "locations": [{"name": "in-cluster-registry", "domain": "cluster-a",
                           "prefixes": [f"{registries.source.host}/"]},
                          {"name": "dr-registry", "domain": "dr-site",
                           "prefixes": [registries.dr.url, f"{registries.dr.host}/"]}],
            "targets": [{"name": "dr", "url": str(tmp_path / "repo"), "domain": "dr-site"}],
            "sources": [{"name": "cluster", "type": "kubernetes", "kubeconfig": kubeconfig, "context": "source",
                         "namespaces": ["serving"], "workload_kinds": ["Deployment"]},
                        {"name": "images", "type": "images", "to": [f"{registries.dr.url}/k8s"]}]}
    path = tmp_path / "plan.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return str(path)


def test_workloads_restored_in_the_recovery_cluster_run_the_dr_copies_by_digest(
        tmp_path, registries, images, clusters, capsys):
    plan = _plan(tmp_path, registries, clusters)
    assert main(["backup", "--plan", plan, "-q"]) == Exit.OK
    report = tmp_path / "audit.json"
    main(["audit", "--plan", plan, "--failed", "cluster-a", "--json", "--out", str(report), "-q"])
    findings = json.loads(report.read_text())["findings"]
    assert not [f for f in findings if f["severity"] == "blocker" and f.get("reference") == images.api]

    capsys.readouterr()
    code = main(["restore", "--plan", plan, "--failed", "cluster-a", "--to", f"cluster={clusters}:dest", "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == Exit.OK, doc
    assert [s["step"] for s in doc["run"]["steps"]] == ["images", "cluster"]
    client = kubernetes.config.new_client_from_config(config_file=clusters, context="dest")
    restored = kubernetes.client.AppsV1Api(client).read_namespaced_deployment("api", "serving")
    host = registries.source.host.replace(":", "-")
    assert restored.spec.template.spec.containers[0].image == \
        f"{registries.dr.host}/k8s/{host}/team/api@{images.api_digest}"
