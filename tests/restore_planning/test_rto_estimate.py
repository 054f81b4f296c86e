"""The RTO estimate: every part present, the plan's parts from the plan, the warm-ups from the
sizes in the catalog and the throughput the backups measured (bytes_read / duration_seconds)."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import pytest

from dr.cli.exitcodes import Exit
from dr.model.plans import RtoSpec
from dr.model.snapshots import Snapshot
from dr.planner.estimating import PARTS, estimate, measured_throughput
from dr.repository.catalogs import read_catalog

PLAN_PARTS = {"detection": 600, "cleanup": 900, "requeue": 300, "communication_rebuild": 180,
              "steady_throughput": 1200}


def test_dry_run_estimate_has_every_part_from_plan_and_measured_throughput(backed_up, capsys):
    w = backed_up
    (w.config / "values.yaml").write_text("replicas: 4\n" * 5000)  # the second backup reads something new
    w.backup()
    capsys.readouterr()
    repo = w.repository()
    snapshots = repo.snapshots()
    assert all(s.stats["duration_seconds"] > 0 for s in snapshots)
    measured = sum(s.stats["bytes_read"] for s in snapshots) / sum(s.stats["duration_seconds"] for s in snapshots)

    code = w.dr(*w.restore_args("--to", f"config={w.root / 'out'}", "--to", f"infra={w.github / 'infra.git'}",
                                "--dry-run", "--json"))
    assert code == Exit.OK
    rto = json.loads(capsys.readouterr().out)["rto_estimate"]
    parts = {p["part"]: p for p in rto["parts"]}
    assert list(parts) == [name for name, _, _ in PARTS]
    for name, seconds in PLAN_PARTS.items():
        assert parts[name]["seconds"] == seconds and parts[name]["basis"] == f"plan restore.rto.{name}"
    assert rto["throughput_bytes_per_second"] == pytest.approx(measured)
    assert "measured" in rto["throughput_basis"] and "2 backups" in rto["throughput_basis"]
    restored = sum(a.size for a in read_catalog(repo, snapshots[-1].catalog))
    assert parts["data_warmup"]["seconds"] == pytest.approx(restored / measured)
    assert parts["image_warmup"]["seconds"] == 0 and parts["checkpoint_download"]["seconds"] == 0
    assert rto["complete"] and rto["total_seconds"] == pytest.approx(sum(PLAN_PARTS.values()) + restored / measured,
                                                                     abs=1e-3)


def test_refused_steps_do_not_count_and_missing_parts_are_unknown(backed_up, capsys):
    w = backed_up
    w.rto = {"detection": "10m"}
    assert w.dr(*w.restore_args("--dry-run", "--json")) == Exit.BLOCKERS  # config needs no --to; infra refused
    doc = json.loads(capsys.readouterr().out)
    parts = {p["part"]: p for p in doc["rto_estimate"]["parts"]}
    assert parts["cleanup"]["seconds"] is None and "declare restore.rto.cleanup" in parts["cleanup"]["basis"]
    assert not doc["rto_estimate"]["complete"]
    ready = [s for s in doc["steps"] if s["status"] == "ready"]
    throughput = doc["rto_estimate"]["throughput_bytes_per_second"]
    assert parts["data_warmup"]["seconds"] == pytest.approx(sum(s["bytes"] for s in ready) / throughput)


def _snapshot(minutes_ago: int, stats: dict) -> Snapshot:
    return Snapshot("p", datetime.now(timezone.utc) - timedelta(minutes=minutes_ago), "h", "0" * 64, 0, [], stats)


def test_throughput_uses_backups_that_measured_and_the_plan_only_as_a_fallback():
    old = _snapshot(30, {"bytes_read": 10, "artifacts": 1})  # written before duration_seconds existed
    idle = _snapshot(20, {"bytes_read": 0, "duration_seconds": 5.0})  # read nothing: says nothing
    busy = _snapshot(10, {"bytes_read": 300 << 20, "duration_seconds": 3.0})
    assert measured_throughput([old, idle, busy])[0] == pytest.approx(100 << 20)
    assert measured_throughput([old, idle])[0] is None
    rto = RtoSpec(throughput="50MiB/s", image_bytes="100MiB")
    result = estimate(rto, [], [old])
    assert result.throughput == 50 << 20 and "restore.rto.throughput" in result.throughput_basis
    images = next(p for p in result.parts if p.name == "image_warmup")
    assert images.seconds == pytest.approx(2.0)


def test_checkpoint_copies_made_outside_the_repository_count_as_moved():
    """A backup that spent its time copying checkpoints (bytes_transferred) read almost nothing
    through the repository; without its copies, its throughput would look a thousand times lower."""
    copying = _snapshot(10, {"bytes_read": 1 << 20, "bytes_transferred": 599 << 20, "duration_seconds": 6.0})
    only_copies = _snapshot(5, {"bytes_read": 0, "bytes_transferred": 400 << 20, "duration_seconds": 4.0})
    assert measured_throughput([copying])[0] == pytest.approx(100 << 20)
    assert measured_throughput([copying, only_copies])[0] == pytest.approx(100 << 20)
    assert "moved" in measured_throughput([only_copies])[1]


def test_the_estimate_table_keeps_its_figures_in_one_column():
    """Every part's figure starts where the others' do, the longest label included
    ('propagation (cached answers expire)' once pushed its figure out of line)."""
    from dr.restore.describing import estimate_lines
    from dr.planner.estimating import Part, RtoEstimate

    parts = [Part(name, label, 1.5 if i % 2 else None, "basis") for i, (name, label, *_) in enumerate(PARTS)]
    lines = estimate_lines(RtoEstimate(parts=parts, throughput_basis="none"))[1:]
    figures = {line.index("unknown") + len("unknown") if "unknown" in line.split("  basis")[0]
               else line.index("1.5s") + len("1.5s") for line in lines}
    assert len(lines) == len(PARTS) and len(figures) == 1  # right-aligned: every figure ends in one column
