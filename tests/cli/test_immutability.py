"""Immutable targets: `immutability: {mode, days}` puts S3 Object Lock retention on every object
dr writes, and prune never asks S3 to delete a locked object (issue 15, "Immutable retention").

All on a real moto server over HTTP; moto enforces Object Lock against its own (real) clock,
so "locked" here means the server refuses to delete the version.

How retention is made short enough to test: the plan's `days` is whole days, so the tests
move dr's clock (dr.model.clock.now, the one clock dr stamps snapshot times and retain-until
dates with) back in time. A backup taken with the clock at `real now - 1 day + 6 s` writes
objects locked until `real now + 6 s`: a prune right away runs before retention ends, one
after a 6 s sleep runs after it, both judged by moto's real clock too. The week of backups
moves the clock one day per backup in the past week, so its last objects are really locked.
"""

from __future__ import annotations

import json
import time
from datetime import datetime, timedelta, timezone

import botocore.exceptions
import pytest

from dr.cli.exitcodes import Exit
from dr.cli.main import main
from dr.model import clock
from tests.cli.planfiles import files_source, local_target, s3_target, write_plan
from tests.fixtures_s3 import s3_client


def _data(tmp_path, text: str = "a\n") -> str:
    data = tmp_path / "data"
    data.mkdir(exist_ok=True)
    (data / "a.txt").write_text(text)
    (data / "same.txt").write_text("unchanged every day\n")
    return str(data)


def _plan(tmp_path, bucket, endpoint, mode, retention="{keep_last: 1}", days=1) -> str:
    return write_plan(tmp_path / "plan.yaml", s3_target(bucket, endpoint, region="us-east-1", lock=mode, days=days),
                      files_source("config", [_data(tmp_path)]) + f"retention: {retention}\n")


def _run(capsys, *argv) -> tuple[int, dict]:
    code = main([*argv, "--json"])
    out = capsys.readouterr().out
    return code, json.loads(out) if out.strip() else {}


def _versions(s3, bucket) -> tuple[list[dict], list[dict]]:
    answer = s3.list_object_versions(Bucket=bucket)
    return answer.get("Versions", []), answer.get("DeleteMarkers", [])


def _delete_refused(s3, bucket, key, version) -> bool:
    try:
        s3.delete_object(Bucket=bucket, Key=key, VersionId=version)
    except botocore.exceptions.ClientError as exc:
        return exc.response["Error"]["Code"] == "AccessDenied"
    return False


def test_a_bucket_without_object_lock_is_a_plan_error_before_any_write(tmp_path, s3_bucket, moto_endpoint, capsys):
    bucket = s3_bucket()
    plan = _plan(tmp_path, bucket, moto_endpoint, "governance")
    assert main(["backup", "--plan", plan]) == Exit.USAGE
    err = capsys.readouterr().err
    assert "Traceback" not in err and "targets[0].immutability" in err
    assert f"bucket '{bucket}' does not have Object Lock enabled" in err and "target 'dr-site'" in err
    assert "--object-lock-enabled-for-bucket" in err and "remove immutability" in err
    assert s3_client(moto_endpoint).list_objects_v2(Bucket=bucket).get("KeyCount", 0) == 0


def test_immutability_on_a_directory_target_is_a_plan_error(tmp_path, capsys):
    target = local_target(tmp_path / "repo").replace("}", ", immutability: {mode: compliance, days: 7}}")
    plan = write_plan(tmp_path / "plan.yaml", target, files_source("config", [_data(tmp_path)]))
    assert main(["backup", "--plan", plan]) == Exit.USAGE
    assert "not an S3 bucket" in capsys.readouterr().err
    assert not (tmp_path / "repo").exists()


@pytest.mark.parametrize("mode", ["governance", "compliance"])
def test_every_object_written_is_locked_at_write_time(tmp_path, s3_bucket, moto_endpoint, capsys, mode):
    bucket = s3_bucket(object_lock=True)
    s3 = s3_client(moto_endpoint)
    plan = _plan(tmp_path, bucket, moto_endpoint, mode)
    before = datetime.now(timezone.utc)
    code, result = _run(capsys, "backup", "--plan", plan)
    assert code == Exit.OK and result["results"][0]["snapshot"]
    versions, markers = _versions(s3, bucket)
    kept = [v for v in versions if not v["Key"].startswith("repo/locks/")]
    assert {v["Key"].split("/")[1] for v in kept} == {"config", "blobs", "snapshots"}
    for version in kept:
        head = s3.head_object(Bucket=bucket, Key=version["Key"], VersionId=version["VersionId"])
        assert head["ObjectLockMode"] == mode.upper()
        until = head["ObjectLockRetainUntilDate"]
        assert before + timedelta(days=1) - timedelta(seconds=5) <= until <= datetime.now(timezone.utc) + timedelta(days=1)
        assert _delete_refused(s3, bucket, version["Key"], version["VersionId"])
    # the backup's lock object was released: not locked, so removed outright (no marker left)
    assert not [m for m in markers if "/locks/" in m["Key"]]
    assert not [v for v in versions if "/locks/" in v["Key"]]


def test_prune_before_and_after_retention_ends(tmp_path, s3_bucket, moto_endpoint, capsys, monkeypatch):
    bucket = s3_bucket(object_lock=True)
    s3 = s3_client(moto_endpoint)
    plan = _plan(tmp_path, bucket, moto_endpoint, "compliance")
    # the lock window must outlast two backups and a dry run even on a loaded CI machine (6 s did not)
    ends = datetime.now(timezone.utc) + timedelta(seconds=15)
    with monkeypatch.context() as patch:
        patch.setattr(clock, "now", lambda: ends - timedelta(days=1))  # locked until `ends`
        assert _run(capsys, "backup", "--plan", plan)[0] == Exit.OK
        _data(tmp_path, "changed\n")
        assert _run(capsys, "backup", "--plan", plan)[0] == Exit.OK

    assert main(["prune", "--plan", plan, "--dry-run"]) == Exit.OK  # what an operator reads
    said = capsys.readouterr().out
    assert "would forget 1 of 2 snapshots" in said and "still under Object Lock retention" in said
    assert datetime.now(timezone.utc) < ends - timedelta(seconds=2), "the lock window passed before the prune"
    code, before = _run(capsys, "prune", "--plan", plan)  # retention has not ended
    assert code == Exit.OK and len(before["forgotten"]) == 1 and before["blobs_deleted"] == 0
    # the old a.txt's blob is unreferenced but locked: left, and listed with its date
    assert [h["key"] for h in before["blobs_held"]] and all(
        h["until"] == ends.strftime("%Y-%m-%dT%H:%M:%SZ") for h in before["blobs_held"] + before["hidden_held"])
    # the forgotten snapshot's manifest is hidden behind a delete marker, its version kept
    assert [h["key"] for h in before["hidden_held"]] == [f"snapshots/{before['forgotten'][0]}"]
    assert _run(capsys, "snapshots", "--plan", plan)[1]["snapshots"].__len__() == 1
    held_keys = {"repo/" + h["key"] for h in before["blobs_held"]}
    assert all(h["key"].split("/")[-1] in said for h in before["blobs_held"])
    assert held_keys <= {v["Key"] for v in _versions(s3, bucket)[0]}

    time.sleep(max(0.0, (ends - datetime.now(timezone.utc)).total_seconds()) + 1.5)
    code, after = _run(capsys, "prune", "--plan", plan)
    assert code == Exit.OK and after["forgotten"] == [] and after["blobs_held"] == [] and after["hidden_held"] == []
    assert after["blobs_deleted"] == len(before["blobs_held"]) and after["hidden_removed"] == 1
    versions, markers = _versions(s3, bucket)
    gone = held_keys | {f"repo/snapshots/{before['forgotten'][0]}"}
    assert not gone & {v["Key"] for v in versions + markers}  # every version removed, space freed
    assert _run(capsys, "verify", "--plan", plan, "--read-data")[1]["ok"] is True


def test_an_object_lock_bucket_holds_a_week_of_backups_with_prune(tmp_path, s3_bucket, moto_endpoint, capsys,
                                                                    monkeypatch):
    """Done-when of issue 15: a week of daily backups, each followed by a prune, on a bucket
    with Object Lock (governance, 3 days), keeping 2 daily snapshots: nothing fails."""
    bucket = s3_bucket(object_lock=True)
    s3 = s3_client(moto_endpoint)
    plan = _plan(tmp_path, bucket, moto_endpoint, "governance", retention="{keep_daily: 2}", days=3)
    start = datetime.now(timezone.utc) - timedelta(days=7)
    held_seen = deleted = hidden_removed = 0
    for day in range(7):
        _data(tmp_path, f"day {day}\n")
        with monkeypatch.context() as patch:
            patch.setattr(clock, "now", lambda day=day: start + timedelta(days=day))
            assert _run(capsys, "backup", "--plan", plan)[0] == Exit.OK
            patch.setattr(clock, "now", lambda day=day: start + timedelta(days=day, minutes=5))
            code, report = _run(capsys, "prune", "--plan", plan)
        assert code == Exit.OK, report
        held_seen += len(report["blobs_held"])
        deleted += report["blobs_deleted"]
        hidden_removed += report["hidden_removed"]
    # day 2 on, each prune forgets the day before yesterday's snapshot; its blob is locked one
    # more day (held), and the next prune deletes it
    assert held_seen >= 4 and deleted >= 4 and hidden_removed >= 3
    listed = _run(capsys, "snapshots", "--plan", plan)[1]["snapshots"]
    assert len(listed) == 2
    assert _run(capsys, "verify", "--plan", plan, "--read-data")[1]["ok"] is True
    out = tmp_path / "restored"
    assert _run(capsys, "restore", "--plan", plan, "--source", "config", "--to", str(out))[0] == Exit.OK
    assert (out / "data" / "a.txt").read_text() == "day 6\n"
    # the unchanged file's blob, written on day 0, was re-locked by each backup that reused it:
    # it is still really locked now, by moto's clock
    versions, _ = _versions(s3, bucket)
    now = datetime.now(timezone.utc)
    live = [v for v in versions if v["Key"].startswith("repo/blobs/")]
    locked = [v for v in live if s3.head_object(Bucket=bucket, Key=v["Key"])["ObjectLockRetainUntilDate"] > now]
    assert len(locked) >= 4  # day 5's and day 6's catalog and a.txt, and same.txt (re-locked)
    assert all(_delete_refused(s3, bucket, v["Key"], v["VersionId"]) for v in locked)
    # no growth beyond what retention holds: one version per visible key, a few hidden ones
    assert len(versions) <= len({v["Key"] for v in versions}) + 3
