"""Check 1 of docs/readiness.md: a training run's checkpoint must hold the full training state.

Real saves by torch (DCP, torch.save, safetensors), judged by the exporter during a real backup
from their indexes alone: the verdict lands in each copy's record (meta `resume`) and, for the
newest checkpoint of a run, as a finding with a runbook.
"""

from __future__ import annotations

import io
import os
import pickle
import shutil
import zipfile
from pathlib import Path

import pytest
import torch
from pydantic import ValidationError
from safetensors.torch import save_file

from dr.exporters.checkpoints.formats.contents import read_contents
from dr.kits.places.files import LocalTree
from dr.exporters.checkpoints.resuming import DEFAULT_REQUIRES, judge, version_field
from tests.checkpoints.test_exporter_helpers import Repo, make_exporter
from tests.checkpoints.writers import VERSIONS, Trainer, save_dcp


def _without(state: dict, *keys: str) -> dict:
    return {k: v for k, v in state.items() if k not in keys}


@pytest.fixture(scope="module")
def backed_up(tmp_path_factory) -> dict:
    """One backup over runs that each lack one part of the training state (DCP), plus a
    release run of weights alone and torch.save and safetensors files."""
    tmp = tmp_path_factory.mktemp("resume")
    runs, t = tmp / "runs", Trainer()
    t.step(2)
    full = t.state()
    variants = {"full": full, "no-optim": _without(full, "optim"), "no-sched": _without(full, "lr_scheduler"),
                "no-rng": _without(full, "rng"), "weights": t.weights(), "release-v1": t.weights()}
    for run, state in variants.items():
        save_dcp(runs / run / "step-10", state)
    (runs / "pt").mkdir()
    torch.save({"model": t.model.state_dict(), "optimizer": t.opt.state_dict(),
                "lr_scheduler": t.sched.state_dict(), "global_step": 10, "rng_state": torch.get_rng_state(),
                "sampler": {"offset": 320}, "git_sha": VERSIONS["git_sha"]}, runs / "pt" / "step-10.pt")
    torch.save(t.model.state_dict(), runs / "pt" / "step-20.pt")  # a bare state_dict, later
    (runs / "st").mkdir()
    save_file({k: v.contiguous() for k, v in t.model.state_dict().items()}, str(runs / "st" / "step-10.safetensors"),
              metadata={"git_sha": "0badc0de", "format": "pt"})
    x = make_exporter({"roots": [str(runs)], "dr_copy": str(tmp / "dr"), "settle_seconds": 0,
                       "resume": {"runs": [{"run": "release-*", "role": "release"}]}})
    backup = Repo(tmp / "repo").backup(x)
    return {"backup": backup, "runs": runs,
            "meta": {(a.meta["run"], a.meta["step"]): a.meta for a in backup.artifacts},
            "findings": {(f["code"], f["run"]): f for f in backup.findings}}


def test_a_full_dcp_training_state_is_resumable_with_its_versions(backed_up):
    resume = backed_up["meta"][("full", 10)]["resume"]
    assert resume["verdict"] == "resumable" and resume["missing"] == []
    assert set(resume["parts"]) >= set(DEFAULT_REQUIRES)
    # the values were read from the .distcp file (each a torch.save'd string), not only named
    assert resume["versions"] == {"code": VERSIONS["git_sha"], "image": VERSIONS["image_digest"],
                                  "config": VERSIONS["config_hash"], "data": VERSIONS["data_version"]}
    assert not any(run == "full" for _, run in backed_up["findings"])


@pytest.mark.parametrize("run, missing", [("no-optim", ["optimizer"]), ("no-sched", ["lr_scheduler"]),
                                          ("no-rng", ["rng"])])
def test_a_dcp_save_missing_one_part_serves_but_cannot_resume(backed_up, run, missing):
    resume = backed_up["meta"][(run, 10)]["resume"]
    assert (resume["verdict"], resume["missing"]) == ("serves, cannot resume", missing)
    finding = backed_up["findings"][("checkpoint-not-resumable", run)]
    assert finding["severity"] == "warning" and finding["missing"] == missing and finding["step"] == 10
    assert finding["runbook"] == "runbooks/checkpoint-not-resumable.md" and Path(finding["runbook"]).is_file()
    assert finding["category"] == "readiness"  # so `dr audit --readiness` lists it
    assert f"missing {missing[0]}" in finding["message"]


def test_weights_only_is_a_finding_on_a_training_run_never_on_a_release(backed_up):
    weights = backed_up["meta"][("weights", 10)]["resume"]
    assert weights["verdict"] == "serves, cannot resume"
    assert weights["missing"] == ["optimizer", "lr_scheduler", "step", "rng", "dataloader"]
    unversioned = backed_up["findings"][("checkpoint-unversioned", "weights")]
    assert unversioned["severity"] == "info" and unversioned["unversioned"] == ["code", "image", "config", "data"]
    release = backed_up["meta"][("release-v1", 10)]["resume"]
    assert (release["verdict"], release["missing"]) == ("model release", [])
    assert ("checkpoint-not-resumable", "release-v1") not in backed_up["findings"]


def test_torch_save_archives_are_judged_from_their_pickle_keys(backed_up):
    full = backed_up["meta"][("pt", 10)]["resume"]
    assert full["verdict"] == "resumable" and full["versions"] == {"code": VERSIONS["git_sha"]}
    bare = backed_up["meta"][("pt", 20)]["resume"]  # a bare state_dict: weights no part names
    assert bare["verdict"] == "serves, cannot resume" and bare["parts"] == {"model": 4}
    # the finding is about the newest checkpoint of the run: step 20
    assert backed_up["findings"][("checkpoint-not-resumable", "pt")]["step"] == 20


def test_a_safetensors_file_serves_and_carries_its_header_versions(backed_up):
    st = backed_up["meta"][("st", 10)]["resume"]
    assert st["verdict"] == "serves, cannot resume" and st["parts"] == {"model": 4}
    assert st["versions"] == {"code": "0badc0de"}


def test_save_times_are_recorded_for_the_advice(backed_up):
    for meta in backed_up["meta"].values():
        assert meta["written_first"] <= meta["written_last"]
    assert backed_up["meta"][("pt", 20)]["previous"]["step"] == 10
    assert "previous" not in backed_up["meta"][("pt", 10)]


class _Boom:
    def __reduce__(self):
        return (os.system, (f"touch {_Boom.target}",))


def test_a_hostile_torch_save_pickle_is_never_executed(tmp_path):
    _Boom.target = str(tmp_path / "pwned")
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("archive/data.pkl", pickle.dumps({"model": _Boom(), "step": 3}))
    (tmp_path / "step-1.pt").write_bytes(buf.getvalue())
    tree = LocalTree(tmp_path)
    (f,) = list(tree.list_files(""))
    contents = read_contents(tree, "torch-save", {f.path: f}, {}, lambda p: version_field(p) is not None)
    assert not (tmp_path / "pwned").exists()
    assert {p for p, _ in contents.entries} == {("model",), ("step",)}
    assert judge(contents, "training", ("step",)).missing == []


def test_an_unknown_required_part_is_a_plan_error_naming_the_known_ones():
    with pytest.raises(ValidationError) as err:
        make_exporter({"roots": ["/x"], "dr_copy": "/y", "resume": {"requires": ["model", "optimiser"]}})
    assert "optimiser" in str(err.value) and "'optimizer'" in str(err.value)
    x = make_exporter({"roots": ["/x"], "dr_copy": "/y", "resume": {"requires": ["model", "ema"],
                                                                     "parts": {"ema": ["ema*"]}}})
    assert x.options.resume.for_run("any") == ("training", ("model", "ema"))



def test_a_record_whose_checkpoint_left_the_source_keeps_its_verdict_and_times(tmp_path):
    """The trainer rotated step-10 away; the next backup records its copy again by reuse, and the
    record keeps what was measured while the checkpoint was at the source."""
    runs, t = tmp_path / "runs", Trainer()
    for step in (10, 20):
        t.step(1)
        save_dcp(runs / "r1" / f"step-{step}", t.state() if step == 10 else t.weights())
    x = {"roots": [str(runs)], "dr_copy": str(tmp_path / "dr"), "settle_seconds": 0}
    repo = Repo(tmp_path / "repo")
    first = {a.identity: a.meta for a in repo.backup(make_exporter(x)).artifacts}
    shutil.rmtree(runs / "r1" / "step-10")
    second = {a.identity: a.meta for a in repo.backup(make_exporter(x)).artifacts}
    kept = ("resume", "written_first", "written_last")
    assert {k: second["near/r1/step-10"][k] for k in kept} == {k: first["near/r1/step-10"][k] for k in kept}
    assert second["near/r1/step-10"]["resume"]["verdict"] == "resumable"
    # step-20 is still at the source: its previous save (measured in the first backup) is kept too
    assert second["near/r1/step-20"]["previous"] == {"step": 10, "written_last": first["near/r1/step-10"]["written_last"]}


def test_a_hf_trainer_directory_is_judged_by_its_files(tmp_path):
    """HF Trainer's layout: weights, optimizer.pt, scheduler.pt, rng_state.pth and
    trainer_state.json (the step) in one marked directory; no data-loader state."""
    t = Trainer()
    t.step(1)
    ck = tmp_path / "run" / "checkpoint-100"
    ck.mkdir(parents=True)
    save_file({k: v.contiguous() for k, v in t.model.state_dict().items()}, str(ck / "model.safetensors"))
    torch.save(t.opt.state_dict(), ck / "optimizer.pt")
    torch.save(t.sched.state_dict(), ck / "scheduler.pt")
    torch.save({"python": 1, "cpu": torch.get_rng_state()}, ck / "rng_state.pth")
    (ck / "trainer_state.json").write_text('{"global_step": 100, "epoch": 0.5}')
    (ck / "COMPLETE").write_text("")
    tree = LocalTree(tmp_path)
    files = {f.path.split("/", 2)[2]: f for f in tree.list_files("run/checkpoint-100")}
    contents = read_contents(tree, "marked", files, {}, lambda p: version_field(p) is not None)
    verdict = judge(contents, "training", DEFAULT_REQUIRES)
    assert set(verdict.found) == {"model", "optimizer", "lr_scheduler", "rng", "step"}
    assert verdict.missing == ["dataloader"] and verdict.verdict == "serves, cannot resume"
    requires = tuple(p for p in DEFAULT_REQUIRES if p != "dataloader")
    assert judge(contents, "training", requires).verdict == "resumable"
