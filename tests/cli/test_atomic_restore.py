"""Restores are all or nothing where a consumer could see a partial result (issue 29, item 2).

A files restore with --to whose one blob is damaged leaves the destination as it was. Real
`dr restore` processes of a checkpoint step and of a files source, SIGKILLed once a random
share of the bytes is written (staging included): while they run and after the kill, a step
directory or a file under its final name is always whole; the next restore completes and
leaves no staging name behind.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

import torch

from dr.cli.exitcodes import Exit
from dr.cli.main import main
from tests.checkpoints.writers import save_dcp
from tests.cli.planfiles import files_source, local_target, random_tree, write_plan

DR = [sys.executable, "-m", "dr.cli.main"]
KILLS = 5
SEED = int(os.environ.get("DR_TEST_SEED", "29"))


def tree(root: Path) -> dict[str, bytes | None]:
    """Every path under `root` (hidden ones too), with a file's bytes (None: a directory)."""
    return {str(p.relative_to(root)): (None if p.is_dir() else p.read_bytes()) for p in sorted(root.rglob("*"))}


def sizes(root: Path) -> dict[str, int]:
    return {str(p.relative_to(root)): p.stat().st_size for p in root.rglob("*") if p.is_file()}


def staged(root: Path) -> list[str]:
    return [str(p) for p in root.rglob(".dr-*")] if root.exists() else []


# -- a refused files restore ----------------------------------------------------------------
def test_a_files_restore_with_a_damaged_blob_leaves_the_destination_as_it_was(tmp_path, capsys):
    data = Path(random_tree(tmp_path, 30, lambda i: 64 << 10))
    plan = write_plan(tmp_path / "plan.yaml", local_target(tmp_path / "repo"), files_source("data", [str(data)]))
    assert main(["backup", "--plan", plan, "-q"]) == Exit.OK
    capsys.readouterr()
    blobs = sorted((p for p in (tmp_path / "repo" / "blobs").rglob("*") if p.is_file()),
                   key=lambda p: p.stat().st_size)
    intact = blobs[-1].read_bytes()  # the largest: one file's content, not the catalog
    damaged = bytearray(intact)
    damaged[len(damaged) // 2] ^= 0x01
    blobs[-1].write_bytes(bytes(damaged))
    dest = tmp_path / "dest"
    (dest / "data" / "d0").mkdir(parents=True)
    (dest / "data" / "d0" / "f0.bin").write_bytes(b"the operator's older f0")  # --overwrite would replace it
    (dest / "kept.txt").write_text("not the source's")
    (dest / "data" / "d1").write_text("a file where the source has a directory")  # set aside, put back
    before = tree(dest)
    restore = ["restore", "--plan", plan, "--source", "data", "--to", str(dest), "--overwrite", "--json"]
    code = main(restore)
    outcome = json.loads(capsys.readouterr().out)
    assert code != Exit.OK and outcome["counts"].get("failed"), outcome
    assert tree(dest) == before  # no file, no directory, no staging file
    blobs[-1].write_bytes(intact)  # the damage repaired, the same restore writes every file
    assert main(restore) == Exit.OK
    capsys.readouterr()
    assert tree(dest / "data") == tree(data) and not staged(dest)


# -- SIGKILL at random points ---------------------------------------------------------------
def _big_step(root: Path) -> Path:
    """A real DCP save of 16 tensors of 4 MiB, one file each (64 MiB): a restore that lasts."""
    gen = torch.Generator().manual_seed(SEED)
    state = {f"layer{i}": torch.randn(1 << 20, generator=gen) for i in range(16)}
    step = root / "llama" / "step-100"
    save_dcp(step, state, single_file_per_rank=False)
    return step


def _checkpoint_plan(tmp_path: Path) -> str:
    source = (f"  - name: training\n    type: checkpoints\n    rpo: 1d\n"
              f"    roots: [\"{tmp_path / 'runs'}\"]\n    dr_copy: \"{tmp_path / 'dr-copy'}\"\n"
              "    settle_seconds: 0\n")
    return write_plan(tmp_path / "plan.yaml", local_target(tmp_path / "repo"), source)


def _restore(plan: str, source: str, dest: Path) -> list[str]:
    return DR + ["restore", "--plan", plan, "--source", source, "--to", str(dest), "--quiet"]


def _kill_when(argv: list[str], due: Callable[[], bool], whole: Callable[[], None]) -> None:
    """Run a restore, checking `whole()` all the time, and SIGKILL it once `due()` (or after 60 s)."""
    child = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while child.poll() is None and not due() and time.monotonic() < deadline:
        whole()
        time.sleep(0.001)
    child.send_signal(signal.SIGKILL)
    child.wait()
    whole()


def _written(dest: Path) -> int:
    """Bytes under `dest` so far, staging and partial files included."""
    total = 0
    for p in dest.rglob("*") if dest.exists() else ():
        try:
            total += p.stat().st_size if p.is_file() else 0
        except FileNotFoundError:  # renamed or removed while we looked
            pass
    return total


def _crash_rounds(argv_for: Callable[[Path], list[str]], dests: Path, whole_for: Callable[[Path], Callable],
                  final: Callable[[Path], None], total: int) -> int:
    """KILLS kills, each once a random share of the bytes is written; returns how many left a
    staging left-over (landed mid-write)."""
    subprocess.run(argv_for(dests / "whole"), check=True, capture_output=True, timeout=120)
    final(dests / "whole")
    rng, partway = random.Random(SEED), 0
    for n in range(KILLS):
        dest, share = dests / f"killed{n}", rng.uniform(0.05, 0.95)
        _kill_when(argv_for(dest), lambda d=dest, s=share: _written(d) >= s * total, whole_for(dest))
        partway += bool(staged(dest))
        subprocess.run(argv_for(dest), check=True, capture_output=True, timeout=120)  # the next restore ...
        final(dest)  # ... completes, whole, and cleans the left-over
    return partway


def test_sigkill_never_shows_a_partial_step_directory(tmp_path, capsys):
    source = _big_step(tmp_path / "runs")
    plan = _checkpoint_plan(tmp_path)
    assert main(["backup", "--plan", plan, "-q"]) == Exit.OK
    capsys.readouterr()
    want = sizes(source)

    def whole_for(dest: Path) -> Callable[[], None]:
        def whole() -> None:
            step = dest / "llama" / "step-100"
            if step.exists():
                assert sizes(step) == want, f"{step} is visible but not whole"
            names = sorted(p.name for p in (dest / "llama").iterdir()) if (dest / "llama").exists() else []
            assert set(names) <= {"step-100", ".dr-staging-step-100"}, names
        return whole

    def final(dest: Path) -> None:
        assert tree(dest / "llama" / "step-100") == tree(source)
        assert not staged(dest), staged(dest)

    partway = _crash_rounds(lambda d: _restore(plan, "training", d), tmp_path / "dests", whole_for, final,
                            sum(want.values()))
    assert partway >= 2, f"only {partway} of {KILLS} kills landed mid-restore: the test proved little"


def test_sigkill_never_shows_a_partial_file(tmp_path, capsys):
    data = Path(random_tree(tmp_path, 120, lambda i: 256 << 10 if i % 10 else 3 << 20))
    plan = write_plan(tmp_path / "plan.yaml", local_target(tmp_path / "repo"), files_source("data", [str(data)]))
    assert main(["backup", "--plan", plan, "-q"]) == Exit.OK
    capsys.readouterr()
    want = sizes(data)

    def whole_for(dest: Path) -> Callable[[], None]:
        def whole() -> None:
            got = {p: s for p, s in sizes(dest / "data").items() if not p.rsplit("/", 1)[-1].startswith(".")} \
                if (dest / "data").exists() else {}
            wrong = {p: s for p, s in got.items() if want.get(p) != s}
            assert not wrong, f"visible under a final name but not whole: {wrong}"
        return whole

    def final(dest: Path) -> None:
        assert tree(dest / "data") == tree(data)
        assert not staged(dest), staged(dest)

    partway = _crash_rounds(lambda d: _restore(plan, "data", d), tmp_path / "dests", whole_for, final,
                            sum(want.values()))
    assert partway >= 2, f"only {partway} of {KILLS} kills landed mid-restore: the test proved little"
