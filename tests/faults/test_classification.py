"""Failures are classified by what they are, wherever in a request they happen (issue 16, item 3).

Over real sockets, through the fault proxy in front of moto: a 503 SlowDown, a reset while the
request body is sent, a reset while an answer's body (an error body included) is read, are all
transient, for the repository's store and the checkpoint places alike. A store stream broken
mid-body goes on where it was.
"""

from __future__ import annotations

import os

import botocore.exceptions
import pytest

from dr.kits.places.contract import TransientPlaceError
from dr.kits.places.s3 import S3Place
from dr.repository.stores.base import ObjectMissing, TransientStoreError
from dr.kits.places.retrying import RetryingPlace
from dr.repository.stores.placing import PlaceStore
from dr.repository.stores.s3 import S3Store
from dr.kits.s3.clients import is_transient
from tests.fixtures_s3 import s3_client


def _error(status: int, code: str = "") -> botocore.exceptions.ClientError:
    return botocore.exceptions.ClientError({"Error": {"Code": code or str(status)},
                                            "ResponseMetadata": {"HTTPStatusCode": status}}, "PutObject")


@pytest.mark.parametrize("status, transient", [(429, True), (500, True), (502, True), (503, True), (507, True),
                                               (501, False), (400, False), (403, False), (412, False)])
def test_http_status_alone_decides_when_the_code_is_unknown(status, transient):
    assert is_transient(_error(status)) is transient


@pytest.mark.parametrize("fault, op", [("slowdown", "put"), ("reset_request", "put"), ("reset_response", "get"),
                                       ("reset_response", "missing")])
def test_each_injected_fault_is_transient_for_the_store(s3_bucket, moto_endpoint, fault_proxy, fault, op):
    bucket = s3_bucket()
    s3_client(moto_endpoint).put_object(Bucket=bucket, Key="repo/present", Body=os.urandom(300_000))
    proxy = fault_proxy(moto_endpoint, rate=1.0, faults=(fault,))
    store = S3Store(bucket, "repo", region="us-east-1", endpoint_url=proxy.url)
    with pytest.raises(TransientStoreError) as caught:
        if op == "put":
            store.put("new", os.urandom(300_000))
        else:  # "missing": the 404's XML error body is cut half-way
            store.get("present" if op == "get" else "absent")
    assert not isinstance(caught.value, ObjectMissing)
    assert proxy.counts[fault] >= 1
    if fault == "slowdown":
        assert "SlowDown (HTTP 503)" in str(caught.value)


@pytest.mark.parametrize("fault", ["slowdown", "reset_request", "reset_response"])
def test_each_injected_fault_is_transient_for_a_checkpoint_place(s3_bucket, moto_endpoint, fault_proxy, fault):
    proxy = fault_proxy(moto_endpoint, rate=1.0, faults=(fault,))
    place = S3Place(s3_bucket(), "ckpt", endpoint_url=proxy.url, region="us-east-1")
    with pytest.raises(TransientPlaceError):
        place.put("shard.distcp", os.urandom(200_000))
    assert proxy.counts[fault] >= 1


def test_a_store_stream_broken_mid_body_goes_on_where_it_was(s3_bucket, moto_endpoint, fault_proxy):
    bucket, data = s3_bucket(), os.urandom(3 << 20)
    s3_client(moto_endpoint).put_object(Bucket=bucket, Key="repo/blob", Body=data)
    proxy = fault_proxy(moto_endpoint, rate=0.5, seed=7, faults=("reset_response",))
    bare = S3Store(bucket, "repo", region="us-east-1", endpoint_url=proxy.url)
    store = PlaceStore(RetryingPlace(bare.place, attempts=10, sleep=lambda _: None), bare.description)
    for _ in range(3):
        with store.open("blob") as stream:
            pieces = iter(lambda: stream.read(256 << 10), b"")
            assert b"".join(pieces) == data
    assert proxy.counts["reset_response"] >= 2
