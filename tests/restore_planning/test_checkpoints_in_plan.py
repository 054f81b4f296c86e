"""A whole-plan restore with a `checkpoints` source next to the `git` and `files` sources.

The trainer's checkpoint root is a local directory placed (a plan location with prefixes) in
the failed cluster; its DR copy is a local directory placed in the surviving region. Real DCP
checkpoints are saved (torch.distributed.checkpoint), backed up through `dr backup`, and the
restore is driven through dr's real command line (dr.cli.main.main, no --source).
"""

from __future__ import annotations

import json
import os

import pytest

from dr.cli.exitcodes import Exit
from dr.exporters.checkpoints import CheckpointsExporter
from dr.planner.ordering_rules import RULES
from dr.repository.catalogs import read_catalog
from tests.restore_planning.worlds import SURVIVING_REGISTRY, World

torch = pytest.importorskip("torch")

from torch.distributed.checkpoint import FileSystemReader  # noqa: E402

from tests.checkpoints.test_exporter_helpers import assert_same_state, load_state, save_steps  # noqa: E402

RUN = "llama-7b"
STEPS = [100, 200]


class CheckpointWorld(World):
    """The restore-planning world plus a training cluster's checkpoint root and its DR copy."""

    def __init__(self, root):
        super().__init__(root)
        self.ckpt_root = root / "cluster-a" / "checkpoints"  # the trainer's root, in the failed cluster
        self.dr_copy = root / "region-b" / "dr-copies"  # the DR copy, in the surviving region
        self.ckpt_root.mkdir(parents=True)
        self.dr_copy.mkdir(parents=True)
        self.saved = save_steps(self.ckpt_root, RUN, STEPS)
        self.sources.append({"name": "training", "type": "checkpoints", "roots": [str(self.ckpt_root)],
                             "dr_copy": str(self.dr_copy), "settle_seconds": 0})

    def plan_data(self):
        data = super().plan_data()
        data["locations"] += [
            {"name": "cluster-fs", "domain": "cluster-a", "kind": "filesystem",
             "prefixes": [str(self.ckpt_root) + "/"]},
            {"name": "dr-fs", "domain": "region-b", "kind": "filesystem",
             "prefixes": [str(self.dr_copy.parent) + "/"]},  # region-b's shared filesystem
        ]
        return data


@pytest.fixture
def cw(tmp_path, capsys) -> CheckpointWorld:
    w = CheckpointWorld(tmp_path)
    w.backup()
    capsys.readouterr()
    return w


def _json(capsys) -> dict:
    return json.loads(capsys.readouterr().out)


def _steps(doc: dict) -> dict[str, dict]:
    return {s["name"]: s for s in doc["steps"]}


def _size_of(path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def test_dry_run_covers_the_lost_checkpoint_root_with_the_surviving_copy_and_estimates_the_download(cw, capsys):
    w = cw
    code = w.dr(*w.restore_args("--to", f"config={w.root / 'out'}", "--to", f"infra={w.github / 'infra.git'}",
                                "--dry-run", "--json"))
    doc = _json(capsys)
    assert code == Exit.OK
    training = _steps(doc)["training"]
    assert training["exporter"] == "checkpoints"
    assert training["status"] == "ready" and training["verdict"] == "ok"
    # The checkpoint root in the failed cluster is where the checkpoint came from, not something
    # the restore reads: it is no need at all (no --to and no remap: the copy is loaded in place).
    assert [d["to"] for d in training["destinations"]] == [None]
    assert "loads it in place" in training["destinations"][0]["how"]
    assert not any(str(w.ckpt_root) in n["reference"] for n in training["needs"])
    # Only the newest step of the run counts, and its DR copy survives in region-b.
    [copy] = training["needs"]
    assert copy["kind"] == "checkpoint-copy" and copy["verdict"] == "ok"
    assert copy["reference"] == str(w.dr_copy / "training" / RUN / "step-200")
    assert "run llama-7b step 200" in copy["reason"] and "cloud/region-b (by location dr-fs) survives" in copy["reason"]

    rto = doc["rto_estimate"]
    parts = {p["part"]: p for p in rto["parts"]}
    throughput = rto["throughput_bytes_per_second"]
    assert throughput and "measured" in rto["throughput_basis"]
    # The download part is the newest checkpoint's bytes (one tier, not step 100) over the throughput.
    repo = w.repository()
    catalog = list(read_catalog(repo, repo.snapshots()[-1].catalog))
    [newest] = [a for a in catalog if a.kind == "checkpoint-copy" and a.meta["step"] == 200]
    assert newest.meta["bytes"] == _size_of(w.ckpt_root / RUN / "step-200")
    assert parts["checkpoint_download"]["seconds"] == pytest.approx(newest.meta["bytes"] / throughput)
    assert parts["checkpoint_download"]["basis"].endswith("/s") and "nothing" not in parts["checkpoint_download"]["basis"]
    # The checkpoint records are not counted again as data.
    others = sum(s["bytes"] for s in doc["steps"] if s["exporter"] != "checkpoints")
    assert parts["data_warmup"]["seconds"] == pytest.approx(others / throughput)
    assert rto["complete"]
    assert rto["total_seconds"] == pytest.approx(sum(p["seconds"] for p in rto["parts"]), abs=1e-3)
    # A dry run writes nothing and keeps no journal.
    assert w.journal_files() == []

    # The text form names the step, its verdict and the download part.
    assert w.dr(*w.restore_args("--to", f"config={w.root / 'out'}", "--to", f"infra={w.github / 'infra.git'}",
                                "--dry-run")) == Exit.OK
    text = capsys.readouterr().out
    assert "training" in text and "checkpoint download" in text


def test_bucket_remap_of_the_lost_root_is_the_destination_and_writing_into_the_failed_cluster_is_refused(cw, capsys):
    w = cw
    moved = w.dr_copy.parent / "training-root"
    w.remaps.append({"kind": "bucket", "old": str(w.ckpt_root), "new": str(moved),
                     "reason": "the trainers resume from region-b"})
    code = w.dr(*w.restore_args("--to", f"config={w.root / 'out'}", "--to", f"infra={w.github / 'infra.git'}",
                                "--dry-run", "--json"))
    training = _steps(_json(capsys))["training"]
    assert code == Exit.OK and training["status"] == "ready"
    [dest] = training["destinations"]
    assert dest["to"] == str(moved) and "plan remap bucket" in dest["how"]
    assert dest["remap"] == {}  # the checkpoints exporter refuses unknown remap keys
    judged = {n["kind"]: n for n in training["needs"]}
    assert judged["destination"]["verdict"] == "ok" and "cloud/region-b" in judged["destination"]["reason"]

    # Naming the lost root itself as the destination is a blocker (--force would be needed).
    code = w.dr(*w.restore_args("--to", f"config={w.root / 'out'}", "--to", f"infra={w.github / 'infra.git'}",
                                "--to", f"training={w.ckpt_root}", "--dry-run", "--json"))
    training = _steps(_json(capsys))["training"]
    assert code == Exit.BLOCKERS and training["status"] == "refused"
    [blocker] = [n for n in training["needs"] if n["verdict"] == "blocker"]
    assert blocker["kind"] == "destination" and blocker["reference"] == str(w.ckpt_root)
    assert "lost when cluster-a (cluster) fails" in blocker["reason"]


def test_whole_plan_restore_writes_the_newest_checkpoint_where_the_trainer_resumes(cw, capsys):
    w = cw
    out = w.root / "resume-root"
    code = w.dr(*w.restore_args("--to", f"config={w.root / 'out'}", "--to", f"infra={w.github / 'infra.git'}",
                                "--to", f"training={out}", "--json"))
    doc = _json(capsys)
    assert code == Exit.OK, doc["run"]
    results = {s["step"]: s for s in doc["run"]["steps"]}
    assert set(results) == {"config", "declarations", "infra", "training"}
    assert all(r["status"] == "succeeded" for r in results.values())
    assert results["training"]["counts"] == {"restored": 1}
    # Only the newest step, at <to>/<run>/step-N, and it loads with DCP into exactly the saved state.
    assert sorted(p.name for p in (out / RUN).iterdir()) == ["step-200"]
    restored = out / RUN / "step-200"
    assert restored.joinpath(".metadata").is_file()
    assert_same_state(load_state(FileSystemReader(str(restored))), w.saved[200])
    assert (w.root / "out" / "config" / "values.yaml").read_text() == "replicas: 3\n"
    record = json.loads(next(p for p in w.journal_files() if p.name.endswith("-training.json")).read_text())
    assert record["status"] == "succeeded"

    # Again, as a new restore: the checkpoint is already there and is left unchanged.
    code = w.dr(*w.restore_args("--to", f"config={w.root / 'out'}", "--to", f"infra={w.github / 'infra.git'}",
                                "--to", f"training={out}", "--new", "--json"))
    again = {s["step"]: s for s in _json(capsys)["run"]["steps"]}
    assert code == Exit.OK and again["training"]["counts"] == {"unchanged": 1}


@pytest.fixture
def with_cluster(tmp_path, capsys):
    from tests.harness import EmulatedCluster, write_kubeconfig

    source, dest = EmulatedCluster(name="source").start(), EmulatedCluster(name="dest").start()
    try:
        pod = {"containers": [{"name": "trainer", "image": f"{SURVIVING_REGISTRY}/team/trainer:v1"}]}
        source.create_objects([
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "training"}},
            {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "trainer", "namespace": "training"},
             "spec": {"selector": {"matchLabels": {"app": "trainer"}},
                      "template": {"metadata": {"labels": {"app": "trainer"}}, "spec": pod}}}])
        kubeconfig = write_kubeconfig(os.path.join(tmp_path, "kubeconfig"), {"source": source, "dest": dest})
        w = CheckpointWorld(tmp_path)
        w.sources.append({"name": "cluster", "type": "kubernetes", "kubeconfig": kubeconfig, "context": "source",
                          "namespaces": ["training"], "workload_kinds": ["Deployment"]})
        w.backup()
        capsys.readouterr()
        yield w, kubeconfig, dest
    finally:
        source.stop()
        dest.stop()


def test_checkpoints_are_restored_before_the_training_workloads(with_cluster, capsys):
    w, kubeconfig, dest = with_cluster
    out = w.root / "resume-root"
    args = ("--to", f"config={w.root / 'out'}", "--to", f"infra={w.github / 'infra.git'}",
            "--to", f"training={out}", "--to", f"cluster={kubeconfig}:dest")
    code = w.dr(*w.restore_args(*args, "--dry-run", "--json"))
    steps = _steps(_json(capsys))
    assert code == Exit.OK
    assert steps["training"]["status"] == steps["cluster"]["status"] == "ready"
    assert steps["training"]["level"] < steps["cluster"]["level"]
    why = {a["step"]: a for a in steps["cluster"]["after"]}
    # the rule is the checkpoints exporter's own (contract v2 ordering), not the core's
    assert not any("checkpoints" in r[0] for r in RULES)
    rule = next(r for r in CheckpointsExporter.ordering.rules if r.before == "role:checkpoints")
    assert rule.after == "@workloads" and not rule.requires
    assert "training" in why and "checkpoints before training jobs" in json.dumps(why["training"])
    assert "training" not in steps["cluster"]["requires"]  # ordered, not held back: PRECEDES

    code = w.dr(*w.restore_args(*args, "--json"))
    doc = _json(capsys)
    assert code == Exit.OK, doc["run"]
    records = [json.loads(p.read_text()) for p in w.journal_files()]
    order = [r["step"] for r in records if r["record"] == "step"]
    assert order.index("training") < order.index("cluster")
    assert_same_state(load_state(FileSystemReader(str(out / RUN / "step-200"))), w.saved[200])
    assert dest.get_object("apps/v1", "Deployment", "trainer", "training") is not None
