"""Retention tiers: every checkpoint near, a thinned remote tier, milestones in an archive that
is never pruned; selection rules on their own, and end to end over several backups."""

from __future__ import annotations

from pathlib import Path

from dr.exporters.checkpoints.options import Milestone, Tier
from dr.exporters.checkpoints.scanning import Checkpoint
from dr.exporters.checkpoints.copies.tiers import Held, is_milestone, select, to_prune
from dr.kits.places.files import FileStat
from tests.checkpoints.test_exporter_helpers import Repo, files_of, make_exporter, save_steps
from tests.checkpoints.writers import Trainer

HOUR = 3600


def ck(step: int, hours: float, complete: bool = True, files: tuple[str, ...] = (".metadata",)) -> Checkpoint:
    stats = {f: FileStat(f"r/step-{step}/{f}", 1, int(hours * HOUR * 1e9)) for f in files}
    return Checkpoint(None, 0, f"r/step-{step}", "dcp", "r", step, stats, () if complete else ("x",))


def held(*steps_hours: tuple[int, float]) -> list[Held]:
    return [Held("r", s, h * HOUR, f"r/step-{s}") for s, h in steps_hours]


def steps(chosen: list[Checkpoint]) -> list[int]:
    return [c.step for c in chosen]


RUN = [ck(s, s) for s in range(1, 11)]  # steps 1..10, one per hour


def test_every_checkpoint_newest_first_without_incomplete_or_held():
    run = RUN[:4] + [ck(5, 5, complete=False)]
    assert steps(select(Tier(name="near"), run, held((2, 2)), None)) == [4, 3, 1]


def test_keep_last_limits_what_is_copied_at_all():
    assert steps(select(Tier(name="near", keep_last=2), RUN, held((9, 9)), None)) == [10]
    assert steps(select(Tier(name="near", keep_last=3), RUN, [], None)) == [10, 9, 8]


def test_every_nth_counts_from_the_newest_copy_held():
    tier = Tier(name="remote", every_nth=3)
    assert steps(select(tier, RUN, [], None)) == [10]  # nothing held: start with the newest
    assert steps(select(tier, RUN, held((4, 4)), None)) == [10, 7]
    assert steps(select(tier, RUN, held((9, 9)), None)) == []


def test_min_interval_uses_checkpoint_time():
    tier = Tier(name="remote", min_interval="3h")
    assert steps(select(tier, RUN, held((2, 2)), None)) == [8, 5]
    both = Tier(name="remote", every_nth=2, min_interval="3h")
    assert steps(select(both, RUN, held((2, 2)), None)) == [10, 8, 6, 4]


def test_milestones_by_step_multiple_or_marker_including_old_ones():
    rule = Milestone(step_multiple=4, marker="MILESTONE")
    run = RUN + [ck(11, 11, files=(".metadata", "MILESTONE"))]
    assert [c.step for c in run if is_milestone(c, rule)] == [4, 8, 11]
    archive = Tier(name="archive", milestones_only=True)
    assert steps(select(archive, run, held((4, 4)), rule)) == [11, 8]


def test_retention_keeps_the_newest_per_run_and_never_prunes_milestones():
    copies = held((1, 1), (5, 5), (3, 3), (9, 9))
    assert [h.step for h in to_prune(Tier(name="near", keep_last=2), copies)] == [1, 3]
    assert to_prune(Tier(name="near"), copies) == []
    assert to_prune(Tier(name="archive", milestones_only=True), copies) == []


# -- end to end ---------------------------------------------------------------------------------
def _copies(root: Path) -> list[str]:
    return sorted(p.parent.relative_to(root).as_posix() for p in root.rglob("DR-COMPLETE"))


def test_three_tiers_over_two_backups(tmp_path):
    trainer = Trainer()
    save_steps(tmp_path / "runs", "r", [1000, 2000, 3000, 4000], trainer)
    (tmp_path / "runs" / "r" / "step-1000" / "MILESTONE").write_text("first eval\n")
    options = {
        "roots": [str(tmp_path / "runs")], "settle_seconds": 0,
        "milestone": {"step_multiple": 3000, "marker": "MILESTONE"},
        "tiers": [{"name": "near", "to": str(tmp_path / "near"), "keep_last": 2},
                  {"name": "remote", "to": str(tmp_path / "remote"), "every_nth": 2},
                  {"name": "archive", "to": str(tmp_path / "archive"), "milestones_only": True}],
    }
    repo = Repo(tmp_path / "repo")
    first = repo.backup(make_exporter(options))
    assert first.findings == []
    assert _copies(tmp_path / "near") == ["ckpts/r/step-3000", "ckpts/r/step-4000"]
    assert _copies(tmp_path / "remote") == ["ckpts/r/step-4000"]
    assert _copies(tmp_path / "archive") == ["ckpts/r/step-1000", "ckpts/r/step-3000"]
    assert len(first.artifacts) == 5

    save_steps(tmp_path / "runs", "r", [5000, 6000, 7000], trainer)
    second = repo.backup(make_exporter(options))
    assert _copies(tmp_path / "near") == ["ckpts/r/step-6000", "ckpts/r/step-7000"]
    assert _copies(tmp_path / "remote") == ["ckpts/r/step-4000", "ckpts/r/step-6000"]
    assert _copies(tmp_path / "archive") == ["ckpts/r/step-1000", "ckpts/r/step-3000", "ckpts/r/step-6000"]
    assert sorted(second.by_identity()) == [
        "archive/r/step-1000", "archive/r/step-3000", "archive/r/step-6000",
        "near/r/step-6000", "near/r/step-7000", "remote/r/step-4000", "remote/r/step-6000"]
    assert any("pruned" in line and "step-3000" in line for line in second.log)

    rows = {r.tier: r for r in make_exporter(options).rpo()}
    assert rows["near"].rpo_seconds == 0.0 and rows["near"].copy_step == 7000
    assert rows["remote"].copy_step == 6000 and rows["remote"].behind == 1
    assert rows["remote"].rpo_seconds >= 0 and rows["archive"].copy_step == 6000


def test_restore_falls_back_to_the_next_tier_when_a_copy_is_damaged(tmp_path):
    from dr.contract import OutcomeStatus

    save_steps(tmp_path / "runs", "r", [1, 2], thread_count=3)  # three shards: one damaged
    options = {"roots": [str(tmp_path / "runs")], "settle_seconds": 0,
               "tiers": [{"name": "near", "to": str(tmp_path / "near")},
                         {"name": "remote", "to": str(tmp_path / "remote")}]}
    repo = Repo(tmp_path / "repo")
    backup = repo.backup(make_exporter(options))
    shard = tmp_path / "near" / "ckpts" / "r" / "step-2" / "__0_1.distcp"
    data = bytearray(shard.read_bytes())
    data[-1] ^= 1
    shard.write_bytes(bytes(data))
    (outcome,) = repo.restore(make_exporter(options), backup.artifacts, to=str(tmp_path / "back"))
    assert outcome.status == OutcomeStatus.RESTORED, outcome
    assert "remote" in outcome.reason and "after: tier near" in outcome.reason and "__0_1.distcp" in outcome.reason
    assert files_of(tmp_path / "back" / "r" / "step-2") == files_of(tmp_path / "runs" / "r" / "step-2")
    (only_near,) = repo.restore(make_exporter(options), backup.artifacts, to=str(tmp_path / "other"),
                                remap={"tier": "near"})
    assert only_near.status == OutcomeStatus.FAILED and "__0_1.distcp" in only_near.reason
