"""Completeness of real DCP checkpoints: whole ones pass, and a writer killed at each stage of
dcp.save is caught with a reason that says what happened."""

from __future__ import annotations

import os
import pickle
from pathlib import Path

import pytest

from dr.exporters.checkpoints.formats.completeness import (
    Candidate,
    MarkerRule,
    Completeness,
    assess,
    assess_settled,
    candidate_listing,
)
from dr.kits.places.files import LocalTree
from tests.checkpoints.conftest import DCP_VARIANTS, age_files
from tests.checkpoints.writers import STAGES, Trainer, save_dcp, save_dcp_dying, truncate


def no_sleep(seconds: float) -> None:
    pass


def judge(root: Path, name: str, markers: tuple[MarkerRule, ...] = ()) -> Completeness:
    return assess_settled(LocalTree(root), Candidate("dcp", name), 30.0, markers, sleep=no_sleep)


def only_reason(verdict: Completeness) -> str:
    assert not verdict.complete
    assert len(verdict.reasons) == 1, verdict.reasons
    return verdict.reasons[0]


@pytest.mark.parametrize("variant", sorted(DCP_VARIANTS))
def test_whole_saves_are_complete(runs: Path, variant: str) -> None:
    verdict = judge(runs, variant)
    assert verdict.complete, verdict.reasons
    assert verdict.reasons == () and verdict.notes == ()
    assert set(verdict.files) == {p.name for p in (runs / variant).iterdir()}
    assert verdict.indexes[".metadata"].required_sizes  # the index was read, not skipped


def test_metadata_missing(runs: Path) -> None:
    (runs / "step_2" / ".metadata").unlink()
    assert ".metadata missing" in only_reason(judge(runs, "step_2"))


def test_shard_short_by_one_byte(runs: Path) -> None:
    shard = runs / "threads_3" / "__0_1.distcp"
    st = shard.stat()
    truncate(shard, by=1)
    os.utime(shard, ns=(st.st_atime_ns, st.st_mtime_ns))  # so that only the size rule speaks
    size = st.st_size
    reason = only_reason(judge(runs, "threads_3"))
    assert f"__0_1.distcp has {size - 1} bytes, needs {size} (short by 1)" in reason
    assert "__0_0.distcp" not in reason and "__0_2.distcp" not in reason


def test_shard_missing(runs: Path) -> None:
    victim = sorted((runs / "per_item").glob("*.distcp"))[3]
    victim.unlink()
    assert f"missing storage files: {victim.name}" in only_reason(judge(runs, "per_item"))


def test_corrupt_index_is_a_reason_not_a_crash(runs: Path) -> None:
    truncate(runs / "step_1" / ".metadata", by=40)
    assert ".metadata unreadable" in only_reason(judge(runs, "step_1"))


def test_malicious_index_is_refused_and_not_run(runs: Path, tmp_path: Path) -> None:
    sentinel = tmp_path / "pwned"
    (runs / "step_1" / ".metadata").write_bytes(pickle.dumps(_System(f"touch {sentinel}")))
    reason = only_reason(judge(runs, "step_1"))
    assert "refused to load global" in reason and "system" in reason
    assert not sentinel.exists()


class _System:
    def __init__(self, command: str) -> None:
        self.command = command

    def __reduce__(self):
        return (os.system, (self.command,))


# ---- writers killed at each stage of a real dcp.save ------------------------------------------

TMP_ALONE = "temporary index .metadata.tmp left without .metadata"
TMP_BESIDE = "temporary index .metadata.tmp left beside .metadata"
NO_INDEX = ".metadata missing"
STALE = ".metadata is older than files it indexes"
SHARD, TMP, META = "__0_0.distcp", ".metadata.tmp", ".metadata"

# (stage, over an older save?): (reasons that must appear, files left behind)
KILLED = {
    ("mid-shard", False): ([NO_INDEX], {SHARD}),
    ("before-index", False): ([NO_INDEX], {SHARD}),
    ("mid-index", False): ([TMP_ALONE, NO_INDEX], {SHARD, TMP}),
    ("before-rename", False): ([TMP_ALONE, NO_INDEX], {SHARD, TMP}),
    # Over an older save in the same directory, its index stays until just before the rename.
    ("mid-shard", True): (["truncated storage files: __0_0.distcp", STALE], {SHARD, META}),
    ("before-index", True): ([STALE], {SHARD, META}),
    ("mid-index", True): ([TMP_BESIDE, STALE], {SHARD, TMP, META}),
    ("before-delete-old-index", True): ([TMP_BESIDE, STALE], {SHARD, TMP, META}),
    ("before-rename", True): ([TMP_ALONE, NO_INDEX], {SHARD, TMP}),
}


@pytest.mark.parametrize(
    "stage,overwrite", sorted(KILLED), ids=[f"{s}-{'over-older' if o else 'fresh'}" for s, o in sorted(KILLED)]
)
def test_writer_killed_at_each_stage(tmp_path: Path, stage: str, overwrite: bool) -> None:
    trainer = Trainer()
    trainer.step(2)
    if overwrite:  # the trainer reuses a directory (e.g. "latest") that holds a whole save
        save_dcp(tmp_path / "ckpt", trainer.state())
        age_files(tmp_path / "ckpt", 60)
        trainer.step(1)
    save_dcp_dying(tmp_path / "ckpt", trainer.state(), stage)
    verdict = judge(tmp_path, "ckpt")
    wanted, left = KILLED[(stage, overwrite)]
    assert {p.name for p in (tmp_path / "ckpt").iterdir()} == left
    assert not verdict.complete
    for text in wanted:
        assert any(text in r for r in verdict.reasons), (text, verdict.reasons)
    assert len(verdict.reasons) == len(wanted), verdict.reasons


def test_all_stages_are_covered() -> None:
    assert {stage for stage, _ in KILLED} == set(STAGES)


def test_old_index_over_new_shards_passes_every_size_check(tmp_path: Path) -> None:
    """Why the temp and mtime rules exist: after an overwriting save dies before its rename,
    the old index parses and the new shards have exactly the sizes it wants."""
    trainer = Trainer()
    trainer.step(2)
    save_dcp(tmp_path / "ckpt", trainer.state())
    trainer.step(1)  # written within the same second: the mtime rule's slack hides it
    save_dcp_dying(tmp_path / "ckpt", trainer.state(), "before-delete-old-index")
    assert only_reason(judge(tmp_path, "ckpt")).startswith(TMP_BESIDE)
    (tmp_path / "ckpt" / TMP).unlink()  # and with both rules off, it would pass
    tree, cand = LocalTree(tmp_path), Candidate("dcp", "ckpt")
    verdict = assess_settled(tree, cand, 0, sleep=no_sleep, shard_newer_slack=None)
    assert verdict.complete


def test_shard_newer_than_index(runs: Path) -> None:
    shard = runs / "threads_3" / "__0_2.distcp"
    shard.write_bytes(shard.read_bytes())  # rewritten now, same bytes, same size
    assert only_reason(judge(runs, "threads_3")) == (
        ".metadata is older than files it indexes (rewritten after the commit by a save that "
        "did not finish?): __0_2.distcp"
    )


def test_shards_left_by_an_earlier_save_are_a_note(tmp_path: Path) -> None:
    """DCP never deletes data files: a 1-thread save over a 3-thread one leaves two stray
    shards. The checkpoint is whole; the strays are worth a note, not a refusal."""
    trainer = Trainer()
    trainer.step(1)
    save_dcp(tmp_path / "ckpt", trainer.state(), thread_count=3)
    age_files(tmp_path / "ckpt", 60)
    trainer.step(1)
    save_dcp(tmp_path / "ckpt", trainer.state())
    verdict = judge(tmp_path, "ckpt")
    assert verdict.complete, verdict.reasons
    assert verdict.notes == ("files no index references (left by another save?): __0_1.distcp, __0_2.distcp",)


# ---- markers ----------------------------------------------------------------------------------


def test_required_markers(runs: Path) -> None:
    ckpt = runs / "step_3"
    rules = (MarkerRule("COMPLETE"), MarkerRule("rank_*.done", count=2))
    verdict = judge(runs, "step_3", rules)
    assert verdict.reasons == (
        "required marker 'COMPLETE' is missing",
        "required marker 'rank_*.done': 0 present, 2 required",
    )
    (ckpt / "COMPLETE").touch()
    (ckpt / "rank_0.done").touch()
    assert only_reason(judge(runs, "step_3", rules)) == "required marker 'rank_*.done': 1 present, 2 required"
    (ckpt / "rank_1.done").touch()
    assert judge(runs, "step_3", rules).complete


# ---- the settle window -------------------------------------------------------------------------


def _writer_busy(action):
    """A sleep function that lets a 'writer' act during the settle window."""
    calls = []

    def sleep(seconds: float) -> None:
        calls.append(seconds)
        action()

    return sleep, calls


def test_file_growing_during_settle_window(runs: Path) -> None:
    shard = runs / "step_1" / "__0_0.distcp"
    size = shard.stat().st_size

    def append() -> None:
        with open(shard, "ab") as f:
            f.write(b"\0" * 7)

    sleep, calls = _writer_busy(append)
    verdict = assess_settled(LocalTree(runs), Candidate("dcp", "step_1"), 12.5, sleep=sleep)
    assert calls == [12.5]
    assert verdict.reasons == (
        f"still being written: changed during the settle window: __0_0.distcp size {size}->{size + 7}",
        f"{STALE} (rewritten after the commit by a save that did not finish?): __0_0.distcp",
    )


def test_rewritten_in_place_and_new_file_during_settle_window(runs: Path) -> None:
    ckpt = runs / "step_1"

    def touch_and_add() -> None:
        st = (ckpt / ".metadata").stat()
        os.utime(ckpt / ".metadata", ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
        (ckpt / "__0_1.distcp").write_bytes(b"x")

    sleep, _ = _writer_busy(touch_and_add)
    reasons = assess_settled(LocalTree(runs), Candidate("dcp", "step_1"), 1, sleep=sleep).reasons
    assert ".metadata mtime changed" in reasons[0] and "__0_1.distcp appeared" in reasons[0]


def test_two_listings_passed_by_the_caller(runs: Path) -> None:
    tree, cand = LocalTree(runs), Candidate("dcp", "step_2")
    before = candidate_listing(tree, cand)
    assert assess(tree, cand, before, candidate_listing(tree, cand)).complete
    (runs / "step_2" / "__0_0.distcp").unlink()
    reasons = assess(tree, cand, before, candidate_listing(tree, cand)).reasons
    assert "__0_0.distcp disappeared" in reasons[0]
    assert "missing storage files: __0_0.distcp" in reasons[1]


def test_real_sleep_settle_window(runs: Path) -> None:
    assert assess_settled(LocalTree(runs), Candidate("dcp", "step_1"), 0.05).complete


# ---- several ranks ------------------------------------------------------------------------------


@pytest.mark.slow
def test_multirank_saves(multirank: Path) -> None:
    world = (MarkerRule("__*.metadata", count=2),)  # "one index per rank" for rank-local saves
    verdict = judge(multirank, "collective")
    assert verdict.complete, verdict.reasons
    assert sorted(verdict.files) == [".metadata", "__0_0.distcp", "__1_0.distcp"]
    verdict = judge(multirank, "rank_local", world)
    assert verdict.complete, verdict.reasons
    assert sorted(verdict.indexes) == ["__0.metadata", "__1.metadata"]
    # Rank 1 was killed before this save: rank 0's part is whole, so only the count tells.
    assert sorted(p.name for p in (multirank / "rank_local_died").iterdir()) == ["__0.metadata", "__0_0.distcp"]
    assert judge(multirank, "rank_local_died").complete
    assert only_reason(judge(multirank, "rank_local_died", world)) == (
        "required marker '__*.metadata': 1 present, 2 required"
    )


def test_rank_local_gap_and_shard_of_a_missing_rank(runs: Path) -> None:
    # Rename a single-rank save into the rank-local layout with rank 1 absent and rank 2 present.
    ckpt = runs / "step_1"
    (ckpt / ".metadata").rename(ckpt / "__2.metadata")
    (runs / "step_2" / ".metadata").rename(ckpt / "__0.metadata")
    reasons = judge(runs, "step_1").reasons
    assert "rank-local indexes missing for ranks [1]" in reasons
