"""Writers that die at every stage of a real DCP save, on a local root and in a bucket, and
multipart uploads that never completed: each checkpoint is reported with its reasons and never
published (no DR copy, no snapshot record), while the complete ones beside it are."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.checkpoints.conftest import age_files
from tests.checkpoints.test_completeness_dcp import KILLED
from tests.checkpoints.test_exporter_helpers import Repo, make_exporter, save_steps, upload_tree
from tests.checkpoints.writers import Trainer, save_dcp, save_dcp_dying
from tests.fixtures_s3 import s3_client


def _runs_with_a_dying_save(root: Path, stage: str, overwrite: bool) -> None:
    """run r1: step-1 whole; step-2 killed at `stage` (over a whole older save if overwrite)."""
    trainer = Trainer()
    save_steps(root, "r1", [1], trainer)
    trainer.step(2)
    if overwrite:
        save_dcp(root / "r1" / "step-2", trainer.state())
        age_files(root / "r1" / "step-2", 60)
        trainer.step(1)
    save_dcp_dying(root / "r1" / "step-2", trainer.state(), stage)


def _assert_only_step_1(backup, dr_files: list[str], wanted: list[str]) -> None:
    assert sorted(backup.by_identity()) == ["near/r1/step-1"]
    assert not [p for p in dr_files if "step-2" in p], dr_files
    (finding,) = [f for f in backup.findings if f.get("step") == 2]
    assert finding["code"] == "checkpoint-incomplete" and finding["severity"] == "warning"
    for text in wanted:
        assert any(text in r for r in finding["reasons"]), (text, finding["reasons"])


@pytest.mark.parametrize("stage,overwrite", sorted(KILLED),
                         ids=[f"{s}-{'over-older' if o else 'fresh'}" for s, o in sorted(KILLED)])
def test_killed_writer_on_a_local_root_is_not_published(tmp_path, stage, overwrite):
    _runs_with_a_dying_save(tmp_path / "runs", stage, overwrite)
    options = {"roots": [str(tmp_path / "runs")], "dr_copy": str(tmp_path / "dr"), "settle_seconds": 0}
    backup = Repo(tmp_path / "repo").backup(make_exporter(options))
    dr_files = [str(p) for p in (tmp_path / "dr").rglob("*")]
    _assert_only_step_1(backup, dr_files, KILLED[(stage, overwrite)][0])


@pytest.mark.parametrize("stage", sorted({s for s, o in KILLED if not o}))
def test_killed_writer_in_a_bucket_is_not_published(tmp_path, s3_bucket, moto_endpoint, stage):
    _runs_with_a_dying_save(tmp_path / "runs", stage, overwrite=False)
    src, dr = s3_bucket(), s3_bucket()
    upload_tree(moto_endpoint, src, "ckpt", tmp_path / "runs")
    options = {"roots": [{"url": f"s3://{src}/ckpt", "endpoint_url": moto_endpoint}],
               "dr_copy": {"url": f"s3://{dr}/copies", "endpoint_url": moto_endpoint}, "settle_seconds": 0}
    backup = Repo(tmp_path / "repo").backup(make_exporter(options))
    listed = s3_client(moto_endpoint).list_objects_v2(Bucket=dr).get("Contents", [])
    _assert_only_step_1(backup, [o["Key"] for o in listed], KILLED[(stage, False)][0])


def _start_upload(endpoint: str, bucket: str, key: str) -> str:
    """A trainer's S3 writer that uploaded one part of a shard, then died."""
    client = s3_client(endpoint)
    upload_id = client.create_multipart_upload(Bucket=bucket, Key=key)["UploadId"]
    client.upload_part(Bucket=bucket, Key=key, UploadId=upload_id, PartNumber=1, Body=b"x" * (5 << 20))
    return upload_id


def test_pending_multipart_upload_makes_a_checkpoint_incomplete(tmp_path, s3_bucket, moto_endpoint):
    """step-2 has every file and its index, but a shard is being (re)uploaded into it; step-3
    died before its index, its last shard's upload never completed."""
    save_steps(tmp_path / "runs", "r1", [1, 2, 3], thread_count=2)
    os.unlink(tmp_path / "runs" / "r1" / "step-3" / ".metadata")
    os.unlink(tmp_path / "runs" / "r1" / "step-3" / "__0_1.distcp")
    src, dr = s3_bucket(), s3_bucket()
    upload_tree(moto_endpoint, src, "ckpt", tmp_path / "runs")
    _start_upload(moto_endpoint, src, "ckpt/r1/step-2/__0_0.distcp")
    _start_upload(moto_endpoint, src, "ckpt/r1/step-3/__0_1.distcp")
    options = {"roots": [{"url": f"s3://{src}/ckpt", "endpoint_url": moto_endpoint}],
               "dr_copy": {"url": f"s3://{dr}/copies", "endpoint_url": moto_endpoint}, "settle_seconds": 0}
    backup = Repo(tmp_path / "repo").backup(make_exporter(options))
    assert sorted(backup.by_identity()) == ["near/r1/step-1"]
    by_step = {f["step"]: f for f in backup.findings if "step" in f}
    assert by_step[2]["code"] == "checkpoint-incomplete"
    assert by_step[2]["reasons"] == ["multipart upload never completed for r1/step-2/__0_0.distcp: "
                                     "a writer is still uploading, or died"]
    assert any(".metadata missing" in r for r in by_step[3]["reasons"])
    assert any("r1/step-3/__0_1.distcp" in r for r in by_step[3]["reasons"])
    pending = [f for f in backup.findings if f["code"] == "checkpoint-multipart-pending"]
    assert sorted(f["path"] for f in pending) == ["r1/step-2/__0_0.distcp", "r1/step-3/__0_1.distcp"]
    assert len(s3_client(moto_endpoint).list_multipart_uploads(Bucket=src).get("Uploads", [])) == 2


def test_a_file_still_growing_is_in_progress_not_copied(tmp_path):
    save_steps(tmp_path / "runs", "r1", [1, 2])
    shard = tmp_path / "runs" / "r1" / "step-2" / "__0_0.distcp"
    options = {"roots": [str(tmp_path / "runs")], "dr_copy": str(tmp_path / "dr"), "settle_seconds": 5}
    x = make_exporter(options)
    waited = []

    def trainer_writes(seconds: float) -> None:
        waited.append(seconds)
        with open(shard, "ab") as f:
            f.write(b"more")

    x.sleep = trainer_writes
    backup = Repo(tmp_path / "repo").backup(x)
    assert waited == [5] and sorted(backup.by_identity()) == ["near/r1/step-1"]
    (finding,) = [f for f in backup.findings if f.get("step") == 2]
    assert finding["code"] == "checkpoint-in-progress" and finding["severity"] == "info"
    assert "still being written" in finding["reasons"][0] and "__0_0.distcp size" in finding["reasons"][0]


def test_required_marker_and_unnamed_checkpoints(tmp_path):
    save_steps(tmp_path / "runs", "r1", [1, 2])
    (tmp_path / "runs" / "r1" / "step-1" / "COMPLETE").write_text("")
    save_dcp(tmp_path / "runs" / "scratch", Trainer().state())  # no run/step in its path
    options = {"roots": [str(tmp_path / "runs")], "dr_copy": str(tmp_path / "dr"), "settle_seconds": 0,
               "markers": ["COMPLETE"]}
    backup = Repo(tmp_path / "repo").backup(make_exporter(options))
    assert sorted(backup.by_identity()) == ["near/r1/step-1"]
    codes = {(f["code"], f.get("step", f.get("path"))) for f in backup.findings}
    assert ("checkpoint-unnamed", "scratch") in codes
    (missing,) = [f for f in backup.findings if f.get("step") == 2]
    assert missing["reasons"] == ["required marker 'COMPLETE' is missing"]
    assert (tmp_path / "dr" / "ckpts" / "r1" / "step-1" / "COMPLETE").exists()


def test_a_missing_root_directory_is_an_error_not_an_empty_source(tmp_path):
    """Found by the conformance suite: a misspelt root listed nothing and the backup looked healthy."""
    save_steps(tmp_path / "runs", "r1", [1])
    age_files(tmp_path / "runs", 3600)
    options = {"roots": [str(tmp_path / "runs"), str(tmp_path / "no-such-runs")], "dr_copy": str(tmp_path / "dr"),
               "settle_seconds": 0}
    backup = Repo(tmp_path / "repo").backup(make_exporter(options))
    (finding,) = [f for f in backup.findings if f["code"] == "checkpoint-root-missing"]
    assert finding["severity"] == "error" and str(tmp_path / "no-such-runs") in finding["message"]
    assert backup.artifacts  # the root that exists is still backed up
