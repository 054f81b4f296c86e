"""Check 3's join: a training run whose measured save does not fit its spot job's notice window.

One plan, two sources backed up through the CLI: a `kubernetes` source (kmock, tests/harness)
whose jobs select GKE spot nodes (`cloud.google.com/gke-spot: "true"`, notice 30 s, grace 60 s
and declared SIGTERM handling, so no other spot finding), and a `checkpoints` source whose real
DCP saves carry set write times (as in tests/cli/test_advise_checkpoints.py):

  run      save   its job                        expected
  llama    90 s   train/llama (by name)          flagged: 90 s > min(30 s notice, 60 s grace)
  gemma    90 s   train/writer (the plan's link) flagged
  mistral  10 s   train/writer (the plan's link) not flagged: fits (the twin)
  qwen     90 s   train/qwen, on-demand          not flagged: cannot be preempted (the twin)
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from dr.cli.exitcodes import Exit
from dr.cli.main import main
from dr.repository.encryption import generate_identity
from tests.audit.test_readiness_audit import _audit
from tests.audit.test_reports import documented_objects
from tests.checkpoints.test_exporter_helpers import save_steps
from tests.cli.planfiles import local_target, write_plan
from tests.harness import EmulatedCluster, write_kubeconfig

T0 = 1_780_000_000
SAVES = {"llama": 90, "gemma": 90, "mistral": 10, "qwen": 90}


def _job(name: str, spot: bool) -> dict:
    pod = {"restartPolicy": "Never", "terminationGracePeriodSeconds": 60,
           "containers": [{"name": "train", "image": "registry.example/train:1"}]}
    if spot:
        pod["nodeSelector"] = {"cloud.google.com/gke-spot": "true"}
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": name, "namespace": "train", "annotations": {"dr.io/handles-sigterm": "true"}},
            "spec": {"template": {"spec": pod}}}


def _date(checkpoint: Path, end: float, took: int) -> None:
    """Data files written from end-took on, the index last, at `end` (as DCP writes them)."""
    files = sorted(checkpoint.iterdir(), key=lambda f: f.name == ".metadata")
    for i, f in enumerate(files):
        t = end if f.name == ".metadata" else end - took + i
        os.utime(f, (t, t))


@pytest.fixture(scope="module")
def backed_up(tmp_path_factory):
    root = tmp_path_factory.mktemp("spot-saves")
    for run, took in SAVES.items():
        save_steps(root / "runs", run, [100, 200])
        for i, step in enumerate([100, 200]):
            _date(root / "runs" / run / f"step-{step}", T0 + i * 3600, took)
    cluster = EmulatedCluster(name="spot-saves").start()
    try:
        cluster.create_objects([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "train"}},
                                _job("llama", True), _job("writer", True), _job("qwen", False)])
        write_kubeconfig(os.path.join(root, "kubeconfig"), {"source": cluster})
        sources = (f"  - name: cluster\n    type: kubernetes\n    kubeconfig: kubeconfig\n    context: source\n"
                   f"  - name: training\n    type: checkpoints\n    roots: [\"{root / 'runs'}\"]\n"
                   f"    dr_copy: \"{root / 'dr-copy'}\"\n    settle_seconds: 0\n"
                   "readiness:\n  runs:\n    - {run: \"gem*\", job: train/writer}\n    - {run: mistral, job: train/writer}\n")
        _, recipient = generate_identity()
        plan = write_plan(root / "plan.yaml", local_target(root / "repo"), sources, [recipient])
        backed = main(["backup", "--plan", plan, "-q"])
    finally:
        errors = cluster.errors
        cluster.stop()  # the audit reads only the snapshot
    assert errors == [] and backed == Exit.OK
    return plan


def test_a_save_longer_than_the_notice_is_flagged_and_its_twins_are_not(backed_up, capsys):
    code, out = _audit(capsys, backed_up, "--readiness", "--json")
    doc = json.loads(out)
    found = [f for f in doc["findings"] if f["scenario"] == "readiness"]
    assert code == Exit.OK
    assert {(f["kind"], f["reference"]) for f in found} == {
        ("spot-save-exceeds-notice", "Job/train/llama (run llama)"),
        ("spot-save-exceeds-notice", "Job/train/writer (run gemma)")}
    [f] = [f for f in found if "llama" in f["reference"]]
    assert f["code"] == "readiness-finding" and f["severity"] == "warning"
    assert f["runbook"] == "runbooks/spot-save-exceeds-notice.md" and f["sources"] == ["cluster", "training"]
    assert "takes 90 s to save" in f["message"] and "has 30 s to save" in f["message"]
    assert "the gke notice of 30 s" in f["message"] and "Job/train/llama" in f["message"]
    assert f["backup"] == {"source": "training", "code": "spot-save-exceeds-notice", "severity": "warning",
                           "object": "run llama"}
    assert set(f["backup"]) == documented_objects()["backup"]
    assert doc["readiness"]["codes"] == {"spot-save-exceeds-notice": 2}
    # the fact the kubernetes backup recorded is no finding of its own
    assert not [f for f in doc["findings"] if f["kind"] == "spot-preemptible-jobs"]


def test_strict_makes_it_a_blocker_and_without_the_flag_it_is_counted(backed_up, capsys):
    code, out = _audit(capsys, backed_up, "--readiness", "--strict", "--json")
    assert code == Exit.BLOCKERS
    assert [f["severity"] for f in json.loads(out)["findings"] if f["scenario"] == "readiness"] == ["blocker"] * 2
    code, out = _audit(capsys, backed_up, "--json")
    doc = json.loads(out)
    assert code == Exit.OK and doc["readiness"]["recorded"] == 2 and doc["readiness"]["shown"] is False
    assert not [f for f in doc["findings"] if f["scenario"] == "readiness"]


def test_the_markdown_links_its_runbook(backed_up, capsys):
    _, text = _audit(capsys, backed_up, "--readiness")
    section = text.split("## Readiness (go-live checks)")[1]
    assert "[readiness-finding](runbooks/spot-save-exceeds-notice.md)" in section and "run llama" in section
    assert "mistral" not in section and "qwen" not in section
