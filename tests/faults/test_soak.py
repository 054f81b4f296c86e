"""The soak trial (issue 29, item 4) at a reduced size: bench/soak.py's own code, 60 backups.

The full trial (`python bench/soak.py --backups 500`) takes too long for CI; this runs the
same loop with the same fault rates (5% 503 SlowDown, 1% connection resets) and the same end
checks: a prune every 10th backup, `dr verify --read-data` clean, every kept snapshot restored
equal to what the source held when it was taken, and the medians of the last 20 backups'
duration and peak RSS no higher than the first 20's (within the tolerances bench/soak.py
explains). Every dr command is a real process; a command that exits 3 because faults outlasted
its retries passes only if the next one of its kind exits 0.
"""

from __future__ import annotations

import os

import pytest

from bench.soak import Command, Config, ExitRule, retries_in, soak, summary


@pytest.mark.slow
def test_sixty_backups_and_six_prunes_through_faults_keep_the_repository_intact(tmp_path, s3_bucket,
                                                                              moto_endpoint):
    config = Config(backups=60, prune_every=10, window=20, keep_last=10)
    report = soak(str(tmp_path), moto_endpoint, s3_bucket(region="us-east-1"), config, dict(os.environ),
                  log=lambda line: None)
    print(summary(report))  # the figures, for `pytest -s`
    assert report.failures() == [], summary(report)
    assert len(report.backups()) == 60
    assert sum(c.kind == "prune" for c in report.commands) == 6
    assert report.restored >= 10, summary(report)  # keep_last good snapshots, each restored and compared
    faults, retried = sum(c.faults for c in report.commands), sum(c.retried for c in report.commands)
    assert faults >= 40, summary(report)  # ~2,000 requests at 6%: the proxy really injected
    assert retried >= faults * 0.9, summary(report)  # dr repeated (nearly) every request a fault met
    assert report.fault_counts.get("proxy_errors", 0) == 0, report.fault_counts


def _judged(*exits: int, stderr: str = "") -> list[str]:
    rule = ExitRule()
    problems = [p for n, code in enumerate(exits, 1) for p in rule.judge(Command("backup", n, 1.0, 40.0, code), stderr)]
    return problems + rule.unpaid()


def test_an_exit_3_passes_only_when_the_next_command_of_its_kind_exits_0():
    assert _judged(0, 3, 0, 3, 0) == []
    assert _judged(3, 3, 0) == ["backup 2 (exit 3) right after backup 1 exited 3: "]
    assert _judged(0, 3) == ["backup 2 exited 3 and no later backup made up for it"]
    assert _judged(0, 6, 0, 1) == ["backup 2 (exit 6): ", "backup 4 (exit 1): "]  # damage, failure: never
    assert _judged(0, stderr="Traceback (most recent call last):")[0].startswith("backup 1 (exit 0): a traceback")


def test_a_retry_is_the_same_request_seen_again_after_a_fault():
    journal = [("GET", "/b/repo/config", "slowdown"), ("GET", "/b/repo/config", ""),
               ("PUT", "/b/repo/blobs/ab/abc", "reset_response"), ("PUT", "/b/repo/blobs/ab/abc", ""),
               ("GET", "/b/repo/snapshots/x", "reset_request")]  # the last one was given up on
    assert retries_in(journal) == (3, 2)
