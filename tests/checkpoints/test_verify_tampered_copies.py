"""Verify finds everything a restore would refuse, in checkpoint DR copies too (issue 16, item 1).

A real DCP checkpoint is backed up to a directory DR copy, then the copy is damaged in one of
eight ways. `dr restore` refuses each (naming the file); `dr verify` finds each (against the
snapshot's record of the copy); `dr status` finds each that can be seen without the
repository (marker, manifest, sizes; with --read-data every byte), and says BREACH.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from dr.cli.exitcodes import Exit
from dr.cli.main import main
from tests.checkpoints.test_exporter_helpers import save_steps
from tests.cli.planfiles import files_source, local_target, write_plan


def _plan(tmp_path) -> str:
    source = (f"  - name: training\n    type: checkpoints\n    rpo: 1d\n"
              f"    roots: [\"{tmp_path / 'runs'}\"]\n    dr_copy: \"{tmp_path / 'dr-copy'}\"\n"
              "    settle_seconds: 0\n")
    return write_plan(tmp_path / "plan.yaml", local_target(tmp_path / "repo"),
                      files_source("config", [str(tmp_path / "runs")]) + source)


def _copy(tmp_path) -> Path:
    [marker] = (tmp_path / "dr-copy").rglob("DR-COMPLETE")
    return marker.parent


def _data_files(copy: Path) -> list[Path]:
    return sorted(p for p in copy.rglob("*") if p.is_file() and p.name not in ("DR-COMPLETE", "dr-manifest.json"))


def _flip(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))


def _swap_same_size(copy: Path) -> None:
    """Two files of one size trade contents (or one file's halves, when no two sizes match)."""
    files = _data_files(copy)
    by_size: dict[int, list[Path]] = {}
    for f in files:
        by_size.setdefault(f.stat().st_size, []).append(f)
    pair = next((v for v in by_size.values() if len(v) > 1), None)
    if pair:
        a, b = pair[0].read_bytes(), pair[1].read_bytes()
        pair[0].write_bytes(b), pair[1].write_bytes(a)
        return
    big = max(files, key=lambda f: f.stat().st_size)
    data = big.read_bytes()
    half = len(data) // 2
    big.write_bytes(data[half:2 * half] + data[:half] + data[2 * half:])


def _rewrite_manifest_and_marker(copy: Path) -> None:
    """Manifest and marker rewritten to agree with each other about a damaged file: only the
    snapshot's record of the manifest's digest can tell."""
    victim = _data_files(copy)[0]
    _flip(victim)
    manifest = json.loads((copy / "dr-manifest.json").read_text())
    for entry in manifest["files"]:
        if copy / entry["path"] == victim or entry["path"].endswith(victim.name):
            entry["sha256"] = hashlib.sha256(victim.read_bytes()).hexdigest()
    text = json.dumps(manifest).encode()
    (copy / "dr-manifest.json").write_bytes(text)
    marker = json.loads((copy / "DR-COMPLETE").read_text())
    marker["manifest_sha256"] = hashlib.sha256(text).hexdigest()
    (copy / "DR-COMPLETE").write_text(json.dumps(marker))


TAMPERING = {
    "flipped byte": (lambda c: _flip(_data_files(c)[-1]), "read-data"),
    "truncated file": (lambda c: _data_files(c)[-1].write_bytes(_data_files(c)[-1].read_bytes()[:-7]), "cheap"),
    "deleted file": (lambda c: _data_files(c)[0].unlink(), "cheap"),
    "edited manifest": (lambda c: (c / "dr-manifest.json").write_text(
        (c / "dr-manifest.json").read_text().replace('"size"', '"size" ', 1)), "cheap"),
    "deleted marker": (lambda c: (c / "DR-COMPLETE").unlink(), "cheap"),
    "edited marker": (lambda c: (c / "DR-COMPLETE").write_text(
        (c / "DR-COMPLETE").read_text().replace('"manifest_sha256":"', '"manifest_sha256":"0', 1)), "cheap"),
    "same-size swap": (_swap_same_size, "read-data"),
    "manifest and marker rewritten": (_rewrite_manifest_and_marker, "record"),
}


@pytest.fixture
def backed_up(tmp_path, capsys):
    return back_up(tmp_path, capsys)


def back_up(tmp_path, capsys) -> tuple[Path, str]:
    """A real DCP step 100 of run llama, backed up with a directory DR copy, intact."""
    save_steps(tmp_path / "runs", "llama", [100], single_file_per_rank=False)
    plan = _plan(tmp_path)
    assert main(["backup", "--plan", plan, "-q"]) == Exit.OK
    assert main(["verify", "--plan", plan, "--read-data", "-q"]) == Exit.OK  # intact before
    assert main(["status", "--plan", plan, "--read-data", "-q"]) == Exit.OK
    capsys.readouterr()
    return tmp_path, plan


@pytest.mark.parametrize("how", sorted(TAMPERING))
def test_verify_finds_every_damage_a_restore_refuses(backed_up, capsys, how):
    tmp_path, plan = backed_up
    damage, seen_by = TAMPERING[how]
    damage(_copy(tmp_path))
    code = main(["restore", "--plan", plan, "--source", "training", "--to", str(tmp_path / "back"), "--json"])
    printed = capsys.readouterr().out
    outcome = json.loads(printed)
    assert code != Exit.OK and outcome["counts"].get("failed"), f"{how}: the restore did not refuse it: {printed}"

    assert main(["verify", "--plan", plan, "--read-data", "--json"]) == Exit.INTEGRITY, how
    report = json.loads(capsys.readouterr().out)
    [source] = report["outside_copies"]
    assert source["source"] == "training" and not source["copies"][0]["ok"]
    assert source["copies"][0]["problems"], how

    status = main(["status", "--plan", plan, "--json"] + (["--read-data"] if seen_by == "read-data" else []))
    rows = json.loads(capsys.readouterr().out)["runs"]
    if seen_by == "record":  # only the snapshot's record tells; status reads no repository
        return
    assert status == Exit.RPO_BREACH, f"{how}: dr status did not see it"
    [row] = rows
    # a copy whose marker no longer vouches for it is no copy at all; any other damage is named
    assert row["breach"] and (row["copy_step"] is None or "would not restore" in row["detail"]), row


def test_verify_without_read_data_still_checks_markers_manifests_and_sizes(backed_up, capsys):
    tmp_path, plan = backed_up
    _data_files(_copy(tmp_path))[0].unlink()
    assert main(["verify", "--plan", plan]) == Exit.INTEGRITY
    out = capsys.readouterr().out
    assert "copies outside the repository" in out and "PROBLEM: run llama step 100" in out
