"""discover() over a realistic run tree, the local tree's boundaries, and the promise that the
product never imports torch."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import safetensors.torch
import torch

from dr.exporters.checkpoints.formats.completeness import Candidate, assess_settled, discover
from dr.kits.places.files import LocalTree, UnsafePath
from tests.checkpoints.writers import Trainer, save_dcp, save_dcp_dying

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def tree_root(tmp_path: Path, dcp_runs: Path) -> Path:
    root = tmp_path / "root"
    shutil.copytree(dcp_runs / "step_1", root / "runs/a/step_1")
    save_dcp_dying(root / "runs/a/step_2", Trainer().state(), "before-index")  # only a shard
    save_dcp_dying(root / "runs/a/step_3", Trainer().state(), "before-rename")  # tmp index
    final = root / "runs/b/final"
    final.mkdir(parents=True)
    (final / "COMPLETE").touch()
    safetensors.torch.save_file({"w": torch.ones(2)}, final / "model.safetensors")
    save_dcp(final / "dcp", Trainer().state())  # owned by the marked directory
    export = root / "export"
    export.mkdir()
    torch.save({"w": torch.ones(2)}, export / "model.pt")
    torch.save({"w": torch.ones(2)}, export / "ema.pth")
    safetensors.torch.save_file({"w": torch.ones(2)}, export / "weights.safetensors")
    (export / "notes.txt").write_text("not a checkpoint")
    (root / "misc").mkdir()
    (root / "misc/readme.md").write_text("nothing here")
    (root / "rootlevel.pt").write_bytes(b"PK")  # found (and later judged broken)
    os.symlink(root / "runs/a/step_1", root / "latest")  # not followed: no duplicate
    return root


EXPECTED = [
    Candidate("torch-save", "rootlevel.pt"),
    Candidate("torch-save", "export/ema.pth"),
    Candidate("torch-save", "export/model.pt"),
    Candidate("safetensors", "export/weights.safetensors"),
    Candidate("dcp", "runs/a/step_1"),
    Candidate("dcp", "runs/a/step_2"),
    Candidate("dcp", "runs/a/step_3"),
    Candidate("marked", "runs/b/final", ("COMPLETE",)),
]  # shallowest first, then by path


def test_discover_finds_each_kind_once(tree_root: Path) -> None:
    assert list(discover(tree_root)) == EXPECTED
    assert list(discover(LocalTree(tree_root))) == EXPECTED  # a path or a tree


def test_discovered_candidates_judged(tree_root: Path) -> None:
    tree = LocalTree(tree_root)
    verdicts = {c.path: assess_settled(tree, c, 0, sleep=lambda s: None) for c in discover(tree)}
    complete = sorted(p for p, v in verdicts.items() if v.complete)
    assert complete == [
        "export/ema.pth", "export/model.pt", "export/weights.safetensors", "runs/a/step_1", "runs/b/final",
    ]  # fmt: skip
    assert "zip central directory unreadable" in verdicts["rootlevel.pt"].reasons[0]
    assert "dcp/.metadata" in verdicts["runs/b/final"].files  # the whole directory is listed
    (tree_root / "runs/b/final/COMPLETE").unlink()  # marker gone after discovery
    late = assess_settled(tree, EXPECTED[-1], 0, sleep=lambda s: None)
    assert late.reasons == ("required marker 'COMPLETE' is missing",)


def test_other_marker_names(tree_root: Path) -> None:
    (tree_root / "misc/_SUCCESS").touch()
    found = list(discover(tree_root, marker_names=("_SUCCESS",)))
    assert Candidate("marked", "misc", ("_SUCCESS",)) in found
    assert Candidate("safetensors", "runs/b/final/model.safetensors") in found  # no longer owned


def test_local_tree_stays_inside_its_root(tmp_path: Path) -> None:
    (tmp_path / "inside").mkdir()
    (tmp_path / "secret").write_text("x")
    tree = LocalTree(tmp_path / "inside")
    for bad in ("../secret", "/etc/passwd", "a/../../secret"):
        with pytest.raises(UnsafePath):  # the kit's refusal (a ValueError), before the disk is touched
            tree.read(bad, 0, 10)
    os.symlink(tmp_path / "secret", tmp_path / "inside" / "link")
    assert list(tree.list_files()) == []  # symlinked files are not listed
    with pytest.raises(OSError):  # nor read, if one appears after the listing
        tree.read("link", 0, 10)


def test_product_never_imports_torch(dcp_runs: Path) -> None:
    """Run discovery and assessment on a real checkpoint in a fresh interpreter."""
    code = textwrap.dedent(f"""
        import sys
        from dr.exporters.checkpoints.formats import (
            completeness, dcp_metadata, dcp_pickle, discovery, single_file, tree,
        )
        verdicts = [completeness.assess_settled(tree.LocalTree({str(dcp_runs)!r}), c, 0, sleep=lambda s: None)
                    for c in completeness.discover({str(dcp_runs)!r})]
        assert len(verdicts) == 5 and all(v.complete for v in verdicts), verdicts
        heavy = ("torch", "numpy", "safetensors")
        loaded = sorted(m for m in sys.modules if m.split(".")[0] in heavy)
        assert not loaded, loaded
        print("ok")
    """)
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr
