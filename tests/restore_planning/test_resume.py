"""A restore killed mid-way resumes where it stopped; journal objects are written once, never again.

A real `python -m dr.cli.main restore` process is SIGKILLed the moment the first step's journal
object appears, while the second (a folder of many files) is being written. Running the same
command again must continue that restore: the first step is not redone, the second finishes.
"""

from __future__ import annotations

import filecmp
import json
import os
import signal
import subprocess
import time

import pytest

from dr.repository.stores.base import ObjectExists
from dr.restore.journals import JournalError, JournalWriter, read_journal
from tests.restore_planning.worlds import DR, refs

FILES, SIZE = 400, 128 << 10


def _bulk(world) -> None:
    """A second source big enough that its restore is still running when the kill lands."""
    bulk = world.root / "data" / "bulk"
    for i in range(FILES):
        path = bulk / f"d{i % 8}" / f"f{i:04d}.bin"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(os.urandom(SIZE))
    # Names decide the order within a level, and --parallel 1 runs one step at a time.
    world.sources = [{"name": "a-declarations", "type": "git",
                      "repositories": [{"name": "declarations", "url": str(world.declarations)}]},
                     {"name": "b-bulk", "type": "files", "paths": [str(bulk)]}]
    world.remaps = [dict(world.remaps[0], sources=["a-declarations"])]


def _command(world, out) -> list[str]:
    return DR + ["restore", "--plan", world.plan, "--failed", "cluster-a", "--to", f"b-bulk={out}",
                 "--parallel", "1", "--identity", str(world.identity_file), "--json"]


def _kill_after_first_step(world, out) -> None:
    child = subprocess.Popen(_command(world, out), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    journals = world.repo_path / "journals"
    while child.poll() is None and time.monotonic() < deadline:
        if list(journals.glob("*/*-a-declarations.json")):
            break
        time.sleep(0.001)
    child.send_signal(signal.SIGKILL)
    child.wait()


@pytest.mark.slow
def test_killed_restore_resumes_without_redoing_finished_steps(world):
    _bulk(world)
    world.backup()
    out = world.root / "restored"
    _kill_after_first_step(world, out)

    [journal_dir] = list((world.repo_path / "journals").iterdir())
    written = {p.name: (p.stat().st_ino, p.stat().st_mtime_ns, p.read_bytes()) for p in journal_dir.iterdir()}
    names = sorted(n.split("-", 1)[1] for n in written)
    assert names == ["a-declarations.json", "plan.json", "run.json"], \
        f"the kill did not land mid-restore (journal: {names}); the test proved nothing"
    assert refs(world.github / "declarations.git") == refs(world.declarations)

    run = subprocess.run(_command(world, out), capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    doc = json.loads(run.stdout)["run"]
    assert doc["restore_id"] == journal_dir.name and doc["resumed"] and doc["run"] == 2 and doc["finished"]
    steps = {s["step"]: s for s in doc["steps"]}
    assert steps["a-declarations"]["earlier"] and steps["a-declarations"]["counts"] == {}
    assert steps["b-bulk"]["status"] == "succeeded" and not steps["b-bulk"]["earlier"]
    assert "resuming restore " + journal_dir.name in run.stderr

    # Write-once: every object of the first run is still the same file with the same bytes ...
    for name, (inode, mtime, data) in written.items():
        path = journal_dir / name
        assert (path.stat().st_ino, path.stat().st_mtime_ns, path.read_bytes()) == (inode, mtime, data)
    # ... and the finished step has exactly one record: it was not done again.
    journal = read_journal(world.repository(), journal_dir.name)
    step_records = [r["step"] for r in journal.records if r["record"] == "step"]
    assert sorted(step_records) == ["a-declarations", "b-bulk"]
    assert journal.finished and journal.runs == 2
    comparison = filecmp.dircmp(world.root / "data" / "bulk", out / "bulk")
    assert not comparison.diff_files and not comparison.left_only
    restored = [f for _, _, files in os.walk(out / "bulk") for f in files]
    # A file the kill caught half-written was left under the files exporter's temporary name;
    # the resumed run swept it away: what remains is exactly the backup.
    assert sorted(restored) == sorted(f for f in restored if f.endswith(".bin"))
    assert len(restored) == FILES


def test_journal_objects_are_write_once(backed_up):
    w = backed_up
    assert w.dr(*w.restore_args("--to", f"config={w.root / 'out'}", "-q")) == 4
    repo = w.repository()
    [restore_id] = [p.name for p in (w.repo_path / "journals").iterdir()]
    journal = read_journal(repo, restore_id)
    first = next(p for p in w.journal_files() if p.name.startswith("000000-"))
    before = first.read_bytes()
    with pytest.raises(ObjectExists):
        repo.store.put(str(first.relative_to(w.repo_path)), b"{}")
    # A second writer that does not know the journal grew stops instead of overwriting.
    stale = JournalWriter(repo, restore_id, 1)
    with pytest.raises(JournalError, match="another dr process"):
        stale.put("run", {"record": "run", "run": 2})
    assert first.read_bytes() == before and len(read_journal(repo, restore_id).records) == len(journal.records)


def test_resume_names_a_journal_and_refuses_another_snapshots(backed_up, capsys):
    w = backed_up
    assert w.dr(*w.restore_args("--to", f"config={w.root / 'out'}", "-q")) == 4
    [restore_id] = [p.name for p in (w.repo_path / "journals").iterdir()]
    capsys.readouterr()
    (w.config / "new.txt").write_text("new")
    w.backup()
    capsys.readouterr()
    code = w.dr(*w.restore_args("--to", f"config={w.root / 'out'}", "--resume", restore_id))
    assert code == 1 and "--snapshot" in capsys.readouterr().err
    code = w.dr(*w.restore_args("--to", f"config={w.root / 'out'}", "--resume", "20000101T000000Z-00000000"))
    assert code == 1 and "no restore journal" in capsys.readouterr().err
