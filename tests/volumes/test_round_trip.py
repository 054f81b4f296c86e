"""A claim's files through `dr backup` and `dr restore` into a second emulated cluster.

The clusters are emulated API servers (tests/harness/kube.py). THE CSI DRIVER AND THE KUBELET ARE
STAND-INS (tests/harness/volumes.py, tests/harness/jobs.py): a claim is a local directory, a
VolumeSnapshot a copy of it, and the mover Job's container runs as a local process of dr itself,
reached through the emulated API server's pod proxy over real HTTP."""

from __future__ import annotations

import json
import os
import sys
import time

import pytest

from dr.cli.main import main
from tests.harness import EmulatedCluster, write_kubeconfig
from tests.harness.jobs import JobRunner
from tests.harness.volumes import CsiStandIn
from tests.volumes.helpers import claim, outcomes, tree, volumes_plan

@pytest.fixture
def two(tmp_path):
    with EmulatedCluster(name="source") as a, EmulatedCluster(name="recovery") as b:
        kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", {"source": a, "recovery": b})
        with CsiStandIn(a, tmp_path / "csi-a") as csi_a, CsiStandIn(b, tmp_path / "csi-b") as csi_b, \
                JobRunner(a, csi_a, tmp_path / "pods-a", programs={"python": sys.executable}) as run_a, \
                JobRunner(b, csi_b, tmp_path / "pods-b", programs={"python": sys.executable}) as run_b:
            yield {"a": a, "b": b, "csi_a": csi_a, "csi_b": csi_b, "kubeconfig": str(kubeconfig),
                   "runners": (run_a, run_b)}


def seed(folder: str) -> None:
    os.makedirs(os.path.join(folder, "db/empty"))
    with open(os.path.join(folder, "db/data.bin"), "wb") as handle:
        handle.write(os.urandom(300_000))
    with open(os.path.join(folder, "db/sparse"), "wb") as handle:
        handle.truncate(8 << 20)
        handle.seek(4 << 20)
        handle.write(b"middle")
    os.chmod(os.path.join(folder, "db/data.bin"), 0o640)
    os.chown(os.path.join(folder, "db/data.bin"), 999, 998)
    os.symlink("db/data.bin", os.path.join(folder, "current"))


def test_a_claims_files_round_trip_and_an_unchanged_backup_uploads_nothing(two, tmp_path, capsys):
    a = two["a"]
    a.create_objects(claim("qdrant", "data-qdrant-0", labels={"app": "qdrant"}))
    folder = two["csi_a"].directory_of("qdrant", "data-qdrant-0")
    seed(folder)
    path = volumes_plan(tmp_path, two["kubeconfig"], "source", namespaces=["qdrant"])
    assert main(["backup", "--plan", path, "--json"]) == 0, capsys.readouterr()
    first = json.loads(capsys.readouterr().out)
    assert main(["backup", "--plan", path, "--json"]) == 0, capsys.readouterr()
    second = json.loads(capsys.readouterr().out)
    (stats,), (again,) = [r["stats"] for r in first["results"]], [r["stats"] for r in second["results"]]
    assert stats["bytes_uploaded"] > 300_000 and stats["artifacts"] == 7  # 3 directories, 2 files, 1 link, the claim
    assert again["bytes_uploaded"] == 0 and again["artifacts_reused"] == again["artifacts"] == 7
    code = main(["restore", "--plan", path, "--source", "vols", "--to", f"vols={two['kubeconfig']}:recovery",
                 "--json"])
    out = capsys.readouterr().out
    assert code == 0, out
    restored = two["csi_b"].directory_of("qdrant", "data-qdrant-0")
    assert tree(restored) == tree(folder)
    time.sleep(0.5)
    for cluster in (a, two["b"]):
        left = [o for kind in ("Job", "Secret") for o in cluster.list_objects("batch/v1" if kind == "Job" else "v1", kind)
                if (o["metadata"].get("labels") or {}).get("dr.io/temporary")]
        assert left == []


def test_a_backup_removes_what_a_dead_run_left_and_names_skipped_claims(two, tmp_path, capsys):
    a = two["a"]
    labels = {"dr.io/temporary": "volumes", "dr.io/volumes-source": "vols", "dr.io/run": "deadbeef"}
    a.create_objects([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ml"}},
                      {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "dr-move-deadbeef-000000",
                                                                          "namespace": "ml", "labels": labels}},
                      {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                       "metadata": {"name": "pending", "namespace": "ml"},
                       "spec": {"storageClassName": "no-such-class", "accessModes": ["ReadWriteOnce"],
                                "resources": {"requests": {"storage": "1Gi"}}}}])
    path = volumes_plan(tmp_path, two["kubeconfig"], "source", namespaces=["ml"])
    main(["backup", "--plan", path, "--json"])
    backup = capsys.readouterr()
    assert [s for s in a.list_objects("v1", "Secret", "ml")
            if (s["metadata"].get("labels") or {}).get("dr.io/run")] == [], backup
    assert "ml/pending" in backup.out + backup.err, "the skipped claim is not named"


def test_a_second_restore_is_unchanged_and_a_changed_claim_a_conflict_until_overwrite(two, tmp_path, capsys):
    a = two["a"]
    a.create_objects(claim("pg", "data"))
    seed(two["csi_a"].directory_of("pg", "data"))
    path = volumes_plan(tmp_path, two["kubeconfig"], "source", namespaces=["pg"])
    assert main(["backup", "--plan", path, "-q"]) == 0
    restore = ["restore", "--plan", path, "--source", "vols", "--to", f"vols={two['kubeconfig']}:recovery",
               "--json"]
    assert main(restore) == 0
    capsys.readouterr()

    def statuses(extra=()):
        code = main(restore + list(extra))
        text = capsys.readouterr().out
        return code, {o["status"] for o in outcomes(json.loads(text))}, text

    code, seen, text = statuses()
    assert code == 0 and seen == {"unchanged"}, text
    restored = two["csi_b"].directory_of("pg", "data")
    with open(os.path.join(restored, "db/data.bin"), "r+b") as handle:
        handle.write(b"changed at the destination")
    code, seen, text = statuses()
    assert code != 0 and seen == {"conflict", "unchanged"}, text
    (conflict,) = [o for o in outcomes(json.loads(text)) if o["status"] == "conflict"]
    assert conflict["item"] == "pg/data/db/data.bin", text
    code, seen, text = statuses(["--overwrite"])
    assert code == 0 and seen == {"restored", "unchanged"}, text
    assert tree(restored) == tree(two["csi_a"].directory_of("pg", "data"))


def test_round_trip_where_both_clusters_bind_on_first_consumer(tmp_path, capsys):
    """Storage classes with volumeBindingMode WaitForFirstConsumer (EBS, PD, local volumes): a
    claim stays Pending until a pod that mounts it is scheduled. The temporary claim of a backup
    and the new claim of a restore are first mounted by dr's own mover pod, so dr must not wait
    for either to be Bound before it starts the mover; this deadlocks if it does."""
    with EmulatedCluster(name="source") as a, EmulatedCluster(name="recovery") as b:
        kubeconfig = str(write_kubeconfig(tmp_path / "kubeconfig", {"source": a, "recovery": b}))
        wffc = "WaitForFirstConsumer"
        with CsiStandIn(a, tmp_path / "csi-a", binding_mode=wffc) as csi_a, \
                CsiStandIn(b, tmp_path / "csi-b", binding_mode=wffc) as csi_b, \
                JobRunner(a, csi_a, tmp_path / "pods-a", programs={"python": sys.executable}), \
                JobRunner(b, csi_b, tmp_path / "pods-b", programs={"python": sys.executable}):
            a.create_objects(claim("qdrant", "data-qdrant-0"))
            time.sleep(0.3)
            assert a.get_object("v1", "PersistentVolumeClaim", "data-qdrant-0", "qdrant")["status"]["phase"] == "Pending"
            a.create_objects([{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "qdrant-0", "namespace": "qdrant"},
                               "spec": {"nodeName": "node-a", "containers": [{"name": "q", "image": "qdrant"}],
                                        "volumes": [{"name": "d", "persistentVolumeClaim":
                                                     {"claimName": "data-qdrant-0"}}]}}])
            folder = csi_a.directory_of("qdrant", "data-qdrant-0")  # bound now that a pod mounts it
            seed(folder)
            bound = a.get_object("v1", "PersistentVolumeClaim", "data-qdrant-0", "qdrant")
            assert bound["metadata"]["annotations"]["volume.kubernetes.io/selected-node"] == "node-a"
            path = volumes_plan(tmp_path, kubeconfig, "source", namespaces=["qdrant"])
            assert main(["backup", "--plan", path, "--json"]) == 0, capsys.readouterr()
            capsys.readouterr()
            code = main(["restore", "--plan", path, "--source", "vols", "--to", f"vols={kubeconfig}:recovery",
                         "--json"])
            out = capsys.readouterr().out
            assert code == 0, out
            assert tree(csi_b.directory_of("qdrant", "data-qdrant-0")) == tree(folder)
