"""The two kinds of place a checkpoint copy lives in, where their behaviour differs from the
obvious: batch deletion (S3 DeleteObjects takes at most 1,000 keys a request)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from dr.kits.places.local import LocalPlace
from dr.kits.places.s3 import S3Place
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


def test_s3_reads_go_straight_into_the_buffer_and_a_body_cut_midway_is_transient(s3_bucket, moto_endpoint):
    """S3Reader reads the socket into the caller's buffer (places/s3.py, _socket_response), not
    through urllib3's copies. A real moto server behind the fault proxy: a whole read matches
    and hands its connection back; an answer reset part-way is a TransientPlaceError (retried by
    RetryingPlace), never a crash or a short read taken as the end."""
    import os

    from dr.kits.places.contract import TransientPlaceError
    from dr.kits.places.s3 import S3Reader
    from tests.harness.faultproxy import FaultProxy

    bucket = s3_bucket()
    data = os.urandom(3 << 20)
    S3Place(bucket, "r", endpoint_url=moto_endpoint, region="us-east-1").put("f.bin", data)
    with FaultProxy(moto_endpoint, rate=0.0) as clean:
        place = S3Place(bucket, "r", endpoint_url=clean.url, region="us-east-1")
        for _ in range(2):
            reader = S3Reader(place, "f.bin")
            assert reader._socket is not None  # the direct path is the one under test
            buffer = bytearray(len(data) + 10)
            assert reader.readinto(memoryview(buffer)) == len(data) and bytes(buffer[:len(data)]) == data
            assert reader._body is None  # read to its end: the connection went back to the pool
            reader.close()
        assert clean.counts["requests"] == 2
    with FaultProxy(moto_endpoint, rate=1.0, faults=("reset_response",), seed=3) as cutting:
        place = S3Place(bucket, "r", endpoint_url=cutting.url, region="us-east-1")
        cut = 0
        for _ in range(4):
            try:
                reader = S3Reader(place, "f.bin")
            except TransientPlaceError:
                cut += 1  # reset before the headers were whole
                continue
            with pytest.raises(TransientPlaceError):
                reader.readinto(memoryview(bytearray(len(data))))
            reader.close()
            cut += 1
        assert cut == 4 and cutting.counts["reset_response"] == 4
