"""Copies whose requests lose their answers, over a real fault proxy in front of moto.

The hardest retry: the server did the work, the answer never arrived. A CompleteMultipartUpload
retried after that is answered 200 by AWS and moto, NoSuchUpload by some other servers (MinIO,
Ceph RGW); with NoSuchUpload, the object of our size is the one the first attempt completed.
moto cannot answer NoSuchUpload there, so that branch is checked on a real object with the
error the other servers send (the one stand-in here). And a server-side copy is several
requests: each is retried on its own, so one failed HEAD does not redo (or, at a few percent of
failures, give up on) the copy.
"""

from __future__ import annotations

import hashlib
import random

import pytest
from botocore.exceptions import ClientError

from dr.kits.places import s3writing
from dr.kits.places.local import LocalPlace
from dr.kits.places.retrying import RetryingPlace
from dr.kits.places.s3 import S3Place
from dr.exporters.checkpoints.transfer.transferring import FileJob, Transfer
from tests.checkpoints.test_exporter_helpers import bucket_files
from tests.fixtures_s3 import s3_client

MIB = 1 << 20


def _place(bucket: str, url: str, prefix: str = "p") -> RetryingPlace:
    return RetryingPlace(S3Place(bucket, prefix, endpoint_url=url), sleep=lambda s: None)


def _completes(method: str, path: str) -> bool:
    return method == "POST" and "uploadId=" in path


def _copy(src, dst, jobs, **kw) -> dict:
    transfer = Transfer(src, dst, part_size=5 * MIB, **kw)
    try:
        done, failed = transfer.run(jobs)
    finally:
        transfer.close()
    assert failed == {}, failed
    return {d.job.dst_path: d.sha256 for d in done}


def test_a_lost_completion_answer_is_taken_as_done(tmp_path, s3_bucket, moto_endpoint, fault_proxy):
    data = random.Random(1).randbytes(12 * MIB)  # three 5 MiB parts: a multipart upload
    (tmp_path / "shard.bin").write_bytes(data)
    proxy = fault_proxy(moto_endpoint, rate=1.0, faults=("reset_response",), only=_completes, max_faults=1)
    bucket = s3_bucket()
    shas = _copy(LocalPlace(str(tmp_path)), _place(bucket, proxy.url),
                 [FileJob("shard.bin", "shard.bin", len(data))])
    assert proxy.counts["reset_response"] == 1  # the first completion's answer was lost
    assert shas == {"shard.bin": hashlib.sha256(data).hexdigest()}
    assert bucket_files(moto_endpoint, bucket, "p") == {"shard.bin": data}


@pytest.fixture
def staged(s3_bucket, moto_endpoint):
    bucket, rng = s3_bucket(), random.Random(2)
    files = {f"__0_{i}.distcp": rng.randbytes(2000 + i) for i in range(40)} | {"big.distcp": rng.randbytes(12 * MIB)}
    client = s3_client(moto_endpoint)
    for name, body in files.items():
        client.put_object(Bucket=bucket, Key=f"stage/{name}", Body=body)
    return bucket, files


def _server_copy(proxy_url: str, bucket: str, files: dict) -> dict:
    src, dst = _place(bucket, proxy_url, "stage"), _place(bucket, proxy_url, "final")
    list(src.list_files())  # the listing's ETags guard the copies
    return _copy(src, dst, [FileJob(n, n, len(b)) for n, b in files.items()], server_side=True)


def _every_other_head_of(name: str):
    """A fault on every other HEAD of one object (source or copy): no request fails twice in a
    row, but every attempt of a copy that retried all its requests together meets one."""
    heads = []

    def only(method: str, path: str) -> bool:
        if method != "HEAD" or not path.endswith("/" + name):
            return False
        heads.append(path)
        return len(heads) % 2 == 1
    return only


def test_server_side_copies_retry_each_request(staged, moto_endpoint, fault_proxy):
    bucket, files = staged
    proxy = fault_proxy(moto_endpoint, rate=1.0, faults=("slowdown",), only=_every_other_head_of("__0_7.distcp"))
    shas = _server_copy(proxy.url, bucket, files)
    # the copy's two HEADs (source, then copy) each failed once: retried whole, the copy gave up
    assert proxy.counts["slowdown"] >= 2, proxy.counts
    assert shas == {n: hashlib.sha256(b).hexdigest() for n, b in files.items()}
    assert bucket_files(moto_endpoint, bucket, "final") == files


def test_a_lost_part_copy_completion_is_taken_as_done(staged, moto_endpoint, fault_proxy, monkeypatch):
    monkeypatch.setattr(s3writing, "COPY_OBJECT_LIMIT", MIB)
    monkeypatch.setattr(s3writing, "COPY_PART", 5 * MIB)
    bucket, files = staged
    big = {"big.distcp": files["big.distcp"]}
    proxy = fault_proxy(moto_endpoint, rate=1.0, faults=("reset_response",), only=_completes, max_faults=1)
    shas = _server_copy(proxy.url, bucket, big)
    assert proxy.counts["reset_response"] == 1
    assert shas == {"big.distcp": hashlib.sha256(big["big.distcp"]).hexdigest()}
    assert bucket_files(moto_endpoint, bucket, "final") == big


def test_no_such_upload_after_a_lost_answer_means_done_only_for_our_size(s3_bucket, moto_endpoint):
    bucket = s3_bucket()
    s3_client(moto_endpoint).put_object(Bucket=bucket, Key="p/shard.bin", Body=b"x" * 100)
    bare = S3Place(bucket, "p", endpoint_url=moto_endpoint)

    def answer(code: str) -> ClientError:
        return ClientError({"Error": {"Code": code, "Message": "m"}, "ResponseMetadata": {"HTTPStatusCode": 404}},
                           "CompleteMultipartUpload")
    assert s3writing._completed_earlier(bare, "shard.bin", 100, answer("NoSuchUpload"))
    assert not s3writing._completed_earlier(bare, "shard.bin", 99, answer("NoSuchUpload"))  # someone else's
    assert not s3writing._completed_earlier(bare, "other.bin", 100, answer("NoSuchUpload"))
    assert not s3writing._completed_earlier(bare, "shard.bin", 100, answer("InvalidPart"))
