"""The audit and a `volumes` source: a claim whose data is lost with its cluster is a blocker
until a volumes source copies it; then the copy covers it (`dependency-remapped`).

The cluster is an emulated API server; THE CSI DRIVER AND THE KUBELET ARE STAND-INS
(tests/harness/volumes.py, tests/harness/jobs.py), as in test_round_trip.py."""

from __future__ import annotations

import json
import sys

import pytest
import yaml

from dr.cli.main import main
from dr.repository.encryption import generate_identity
from tests.harness import EmulatedCluster, write_kubeconfig
from tests.harness.jobs import JobRunner
from tests.harness.volumes import CsiStandIn
from tests.volumes.helpers import IMAGE


@pytest.fixture
def platform(tmp_path):
    with EmulatedCluster(name="source") as cluster:
        kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", {"source": cluster})
        with CsiStandIn(cluster, tmp_path / "csi") as csi, \
                JobRunner(cluster, csi, tmp_path / "pods", programs={"python": sys.executable}):
            cluster.create_objects([
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ml"}},
                {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                 "metadata": {"name": "data-qdrant-0", "namespace": "ml"},
                 "spec": {"storageClassName": "csi-hostpath-sc", "accessModes": ["ReadWriteOnce"],
                          "resources": {"requests": {"storage": "10Mi"}}}}])
            (csi_folder := csi.directory_of("ml", "data-qdrant-0"))
            with open(f"{csi_folder}/collection.bin", "wb") as handle:
                handle.write(b"vectors" * 1000)
            yield {"cluster": cluster, "kubeconfig": str(kubeconfig)}


def _plan(tmp_path, platform, with_volumes: bool) -> str:
    identity, recipient = generate_identity()
    (tmp_path / "age-identity").write_text(identity + "\n")
    sources = [{"name": "cluster", "type": "kubernetes", "kubeconfig": platform["kubeconfig"], "context": "source",
                "namespaces": ["ml"]}]
    if with_volumes:
        sources.append({"name": "vols", "type": "volumes", "kubeconfig": platform["kubeconfig"], "context": "source",
                        "image": IMAGE, "namespaces": ["ml"]})
    data = {"version": 1, "name": "vols",
            "failure_domains": [{"name": "site-a", "kind": "site", "children": [{"name": "cluster-a", "kind": "cluster"}]},
                                {"name": "site-b", "kind": "site"}],
            "locations": [{"name": "api", "domain": "cluster-a", "kind": "kubernetes-api",
                           "url": platform["cluster"].url},
                          {"name": "dr-registry", "domain": "site-b", "kind": "registry", "hosts": ["registry.dr.example"]},
                          {"name": "keys", "domain": "site-b", "kind": "secret-store", "prefixes": [str(tmp_path)]}],
            "protects_against": ["cluster-a"],
            "encryption": {"recipients": [recipient], "key_location": str(tmp_path / "age-identity")},
            "targets": [{"name": "dr", "url": str(tmp_path / "repo"), "domain": "site-b",
                         "credentials_location": str(tmp_path)}],
            "sources": sources}
    path = tmp_path / "plan.yaml"
    path.write_text(yaml.safe_dump(data))
    return str(path)


def _claim_findings(tmp_path, platform, capsys, with_volumes: bool) -> list[dict]:
    plan = _plan(tmp_path, platform, with_volumes)
    assert main(["backup", "--plan", plan, "-q"]) == 0, capsys.readouterr()
    capsys.readouterr()
    main(["audit", "--plan", plan, "--json"])
    document = json.loads(capsys.readouterr().out)
    return [f for f in document["findings"] if f.get("kind") == "volume-data"
            and f.get("reference", "").endswith("/persistentvolumeclaims/data-qdrant-0")]


def test_a_lost_claim_is_a_blocker_until_a_volumes_source_copies_it(tmp_path, platform, capsys):
    (lost,) = _claim_findings(tmp_path, platform, capsys, with_volumes=False)
    assert lost["code"] == "volume-data-lost" and lost["severity"] == "blocker", lost
    found = _claim_findings(tmp_path, platform, capsys, with_volumes=True)
    assert [f["code"] for f in found] == ["dependency-remapped"], found


def test_a_whole_plan_restore_fills_the_claim_before_the_kubernetes_step(tmp_path, platform, capsys, monkeypatch):
    plan = _plan(tmp_path, platform, with_volumes=True)
    monkeypatch.setenv("DR_AGE_IDENTITY_FILE", str(tmp_path / "age-identity"))
    assert main(["backup", "--plan", plan, "-q"]) == 0, capsys.readouterr()
    with EmulatedCluster(name="recovery") as recovery:
        kubeconfig = write_kubeconfig(tmp_path / "kubeconfig-recovery", {"recovery": recovery})
        with CsiStandIn(recovery, tmp_path / "csi-r") as csi, \
                JobRunner(recovery, csi, tmp_path / "pods-r", programs={"python": sys.executable}):
            capsys.readouterr()
            code = main(["restore", "--plan", plan, "--to", f"cluster={kubeconfig}:recovery",
                         "--to", f"vols={kubeconfig}:recovery", "--json"])
            out = capsys.readouterr().out
            assert code == 0, out
            document = json.loads(out)
            steps = {s["name"]: s for s in document["steps"]}
            assert steps["vols"]["level"] < steps["cluster"]["level"], steps
            with open(f"{csi.directory_of('ml', 'data-qdrant-0')}/collection.bin", "rb") as handle:
                assert handle.read() == b"vectors" * 1000
