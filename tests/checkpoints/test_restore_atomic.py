"""A refused checkpoint restore leaves the destination as it was (issue 29, item 2).

The eight kinds of tampering of test_verify_tampered_copies, each against a destination that
already holds an older checkpoint of the same step (restored with --overwrite) and against an
empty one: the restore refuses, and afterwards the destination holds exactly what it held
before: no shard, no step or run directory, no staging left-over.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from dr.cli.exitcodes import Exit
from dr.cli.main import main
from tests.checkpoints.test_verify_tampered_copies import TAMPERING, _copy, back_up
from tests.checkpoints.writers import Trainer
from tests.cli.planfiles import local_target, write_plan


@pytest.fixture
def backed_up(tmp_path, capsys):
    return back_up(tmp_path, capsys)


def tree(root: Path) -> dict[str, bytes | None]:
    """Every path under `root` (hidden ones too), with a file's bytes (None: a directory)."""
    return {str(p.relative_to(root)): (None if p.is_dir() else p.read_bytes()) for p in root.rglob("*")}


def _old_step(back: Path) -> None:
    """What a trainer left at the destination: another save of the same step, and a later one."""
    (back / "llama" / "step-100").mkdir(parents=True)
    (back / "llama" / "step-100" / ".metadata").write_bytes(b"older save of step 100")
    (back / "llama" / "step-100" / "__9_0.distcp").write_bytes(b"a shard this save does not have")
    (back / "notes.txt").write_text("kept")


@pytest.mark.parametrize("occupied", [False, True], ids=["empty", "older-step"])
@pytest.mark.parametrize("how", sorted(TAMPERING))
def test_a_refused_restore_writes_nothing_under_a_final_name(backed_up, capsys, how, occupied):
    tmp_path, plan = backed_up
    back = tmp_path / "back"
    back.mkdir()
    if occupied:
        _old_step(back)
    before = tree(back)
    TAMPERING[how][0](_copy(tmp_path))
    code = main(["restore", "--plan", plan, "--source", "training", "--to", str(back), "--overwrite", "--json"])
    outcome = json.loads(capsys.readouterr().out)
    assert code != Exit.OK and outcome["counts"].get("failed"), f"{how}: not refused: {outcome}"
    assert tree(back) == before, f"{how}: the refused restore changed the destination"


def test_an_intact_copy_replaces_the_older_step_whole(backed_up, capsys):
    tmp_path, plan = backed_up
    back = tmp_path / "back"
    back.mkdir()
    _old_step(back)
    assert main(["restore", "--plan", plan, "--source", "training", "--to", str(back), "--overwrite", "-q"]) == Exit.OK
    source = tmp_path / "runs" / "llama" / "step-100"
    restored = back / "llama" / "step-100"
    assert tree(restored) == tree(source)  # the older save's files are gone with it, not merged
    assert sorted(p.name for p in (back / "llama").iterdir()) == ["step-100"]  # no staging left
    assert (back / "notes.txt").read_text() == "kept"


def test_without_overwrite_an_older_step_is_a_conflict(backed_up, capsys):
    tmp_path, plan = backed_up
    back = tmp_path / "back"
    back.mkdir()
    _old_step(back)
    before = tree(back)
    code = main(["restore", "--plan", plan, "--source", "training", "--to", str(back), "--json"])
    outcome = json.loads(capsys.readouterr().out)
    assert code != Exit.OK and outcome["counts"].get("conflict"), outcome
    assert tree(back) == before


def test_a_single_file_checkpoint_is_published_by_one_rename_or_not_at_all(tmp_path, capsys):
    """torch.save's step-100.pt: staged in llama/.dr-staging-step-100.pt/, renamed beside step-50.pt."""
    trainer = Trainer()
    trainer.step(2)
    (tmp_path / "runs" / "llama").mkdir(parents=True)
    torch.save({"model": trainer.model.state_dict()}, tmp_path / "runs" / "llama" / "step-100.pt")
    plan = write_plan(tmp_path / "plan.yaml", local_target(tmp_path / "repo"),
                      f"  - name: training\n    type: checkpoints\n    rpo: 1d\n"
                      f"    roots: [\"{tmp_path / 'runs'}\"]\n    dr_copy: \"{tmp_path / 'dr-copy'}\"\n"
                      "    settle_seconds: 0\n")
    assert main(["backup", "--plan", plan, "-q"]) == Exit.OK
    [copied] = (tmp_path / "dr-copy").rglob("step-100.pt")
    intact = copied.read_bytes()
    back = tmp_path / "back"
    (back / "llama").mkdir(parents=True)
    (back / "llama" / "step-50.pt").write_bytes(b"an older step")
    before = tree(back)
    copied.write_bytes(intact[:100] + bytes([intact[100] ^ 1]) + intact[101:])
    restore = ["restore", "--plan", plan, "--source", "training", "--to", str(back), "--json"]
    capsys.readouterr()
    assert main(restore) != Exit.OK
    assert json.loads(capsys.readouterr().out)["counts"].get("failed")
    assert tree(back) == before
    copied.write_bytes(intact)
    assert main(restore) == Exit.OK
    assert (back / "llama" / "step-100.pt").read_bytes() == (tmp_path / "runs" / "llama" / "step-100.pt").read_bytes()
    assert sorted(p.name for p in (back / "llama").iterdir()) == ["step-100.pt", "step-50.pt"]
    # a drill compares the restored file with the copy's manifest, not only the restore's word
    scratch = tmp_path / "scratch"
    capsys.readouterr()
    code = main(["drill", "--plan", plan, "--failed", "cluster-a", "--to", str(scratch), "--json"])
    captured = capsys.readouterr()
    assert code == Exit.OK, captured.out + captured.err
    [check] = json.loads(captured.out)["verify"]["steps"]
    assert check["verified"] and check["compared"] == 1 and check["reason"].startswith("all 1 items identical")
