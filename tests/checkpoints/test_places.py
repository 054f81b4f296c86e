"""The two kinds of place a checkpoint copy lives in, where their behaviour differs from the
obvious: batch deletion (S3 DeleteObjects takes at most 1,000 keys a request)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from dr.exporters.checkpointing.places.local import LocalPlace
from dr.exporters.checkpointing.places.s3 import S3Place
from tests.fixtures_s3 import s3_client


def test_s3_delete_many_crosses_the_1000_key_batch_and_ignores_absent_keys(s3_bucket, moto_endpoint):
    bucket = s3_bucket()
    place = S3Place(bucket, "copies/run", endpoint_url=moto_endpoint, region="us-east-1")
    paths = [f"dr-journal/f{i:04}.json" for i in range(1003)]
    with ThreadPoolExecutor(16) as pool:
        list(pool.map(lambda p: place.put(p, b"{}"), paths))
    place.put("keep.distcp", b"data")
    place.delete_many(paths + ["dr-journal/never-written.json"])
    left = [o["Key"] for o in s3_client(moto_endpoint).list_objects_v2(Bucket=bucket).get("Contents", [])]
    assert left == ["copies/run/keep.distcp"]


def test_local_delete_many(tmp_path):
    place = LocalPlace(tmp_path)
    for name in ("a", "b", "c"):
        place.put(name, b"x")
    place.delete_many(["a", "c", "absent"])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b"]


def test_local_partials_are_pending_uploads_that_abort_removes(tmp_path):
    """A copy killed mid-file keeps its partial (to resume from); the sweep sees it as a pending
    upload of the final path and aborts it once it is old."""
    place = LocalPlace(tmp_path)
    writer = place.writer("ckpts/r1/step-7/__0_0.distcp", 10, 4)
    writer.write(1, memoryview(b"abcd"))
    writer.abort(keep_for_resume=True)
    (upload,) = place.pending_uploads("ckpts/")
    assert upload.path == "ckpts/r1/step-7/__0_0.distcp" and upload.initiated > 0
    assert list(place.list_files("ckpts")) == []  # never taken for a copied file
    resumed = place.writer("ckpts/r1/step-7/__0_0.distcp", 10, 4)
    stored = resumed.resumable_parts()
    assert resumed.matches(stored[1], memoryview(b"abcd"), "")
    assert not resumed.matches(stored[2], memoryview(b"efgh"), "")  # never written: zeros
    resumed.abort(keep_for_resume=True)
    place.abort(upload)
    assert place.pending_uploads("ckpts/") == [] and not list((tmp_path / "ckpts" / "r1" / "step-7").iterdir())


def test_a_second_local_copier_of_the_same_file_is_refused(tmp_path):
    place = LocalPlace(tmp_path)
    first = place.writer("f", 8, 4)
    try:
        with pytest.raises(OSError, match="another copier"):
            place.writer("f", 8, 4)
    finally:
        first.abort()
