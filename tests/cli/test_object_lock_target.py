"""`object_lock: true` on a target is checked, not silently accepted (issue 16, item 7).

The plan promises snapshots nobody can delete or overwrite; a backup to a bucket without
Object Lock refuses with a clear one-line error (exit 1) and writes nothing.
"""

from __future__ import annotations

from dr.cli.exitcodes import Exit
from dr.cli.main import main
from tests.cli.planfiles import files_source, local_target, s3_target, write_plan
from tests.fixtures_s3 import s3_client


def _data(tmp_path) -> str:
    data = tmp_path / "data"
    data.mkdir(exist_ok=True)
    (data / "a.txt").write_text("a\n")
    return str(data)


def test_a_bucket_without_object_lock_is_refused(tmp_path, s3_bucket, moto_endpoint, capsys):
    bucket = s3_bucket(region="us-east-1")
    plan = write_plan(tmp_path / "plan.yaml", s3_target(bucket, moto_endpoint, region="us-east-1", lock=True),
                      files_source("config", [_data(tmp_path)]))
    assert main(["backup", "--plan", plan]) == Exit.FAILURE
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert "object_lock: true" in err and "does not have Object Lock enabled" in err and bucket in err
    assert s3_client(moto_endpoint).list_objects_v2(Bucket=bucket).get("KeyCount", 0) == 0


def test_a_bucket_with_object_lock_is_accepted(tmp_path, s3_bucket, moto_endpoint, capsys):
    bucket = s3_bucket(region="us-east-1", object_lock=True)
    plan = write_plan(tmp_path / "plan.yaml", s3_target(bucket, moto_endpoint, region="us-east-1", lock=True),
                      files_source("config", [_data(tmp_path)]))
    assert main(["backup", "--plan", plan, "-q"]) == Exit.OK


def test_object_lock_on_a_directory_target_is_refused(tmp_path, capsys):
    target = local_target(tmp_path / "repo").replace("}", ", object_lock: true}")
    plan = write_plan(tmp_path / "plan.yaml", target, files_source("config", [_data(tmp_path)]))
    assert main(["backup", "--plan", plan]) == Exit.FAILURE
    assert "only S3 targets have Object Lock" in capsys.readouterr().err
    assert not (tmp_path / "repo" / "config").exists()
