"""The place conformance suite (dr/exporters/checkpoints/places/conformance.py) over every place.

A directory, the same wrapped in RetryingPlace (the wrapper must not change the contract),
and S3Place over real HTTP against two moto servers (us-east-1 on one, eu-west-1 with a
prefix on the other), as the exporter's peers run: sources on one endpoint, DR copies on
another. Faults are injected where the request leaves dr: botocore's before-send hook (a 503
answer, a reset connection) and the body's raw stream (a reset mid-body, raised by urllib3 as
in life); for a directory, os.open failing with a network filesystem's errno.
"""

from __future__ import annotations

import errno
import hashlib
import os
from contextlib import contextmanager
from unittest import mock

import botocore.awsrequest
import botocore.exceptions
import pytest
import urllib3.exceptions

from dr.kits.places.conformance import check_place
from dr.kits.places.contract import PermanentPlaceError, TransientPlaceError
from dr.kits.places.local import LocalPlace
from dr.kits.places.retrying import RetryingPlace
from dr.kits.places.s3 import S3Place
from dr.exporters.checkpoints.transfer.transferring import FileJob, Transfer
from dr.repository.stores.s3 import S3Store
from dr.kits.s3 import lean as s3_lean
from dr.kits.s3.clients import is_transient


class _Raw:
    def __init__(self, data: bytes) -> None:
        self._data = data

    def stream(self, **_):
        yield self._data


class _Breaking:
    """A body's raw stream that resets after `after` bytes, as urllib3 reports it."""

    def __init__(self, raw, after: int) -> None:
        self._raw, self._left = raw, after

    def readinto(self, b) -> int:
        if self._left <= 0:
            raise urllib3.exceptions.ProtocolError("Connection broken", ConnectionResetError(errno.ECONNRESET, "reset"))
        n = self._raw.readinto(memoryview(b)[:min(len(b), self._left)])
        self._left -= n
        return n

    def read(self, amt=None) -> bytes:
        buf = bytearray(amt or (1 << 20))
        return bytes(buf[:self.readinto(buf)])

    def __getattr__(self, name):
        return getattr(self._raw, name)


class S3Faults:
    """Failures injected into one place's client, once each."""

    def __init__(self, place: S3Place) -> None:
        self.events = place.client.meta.events

    @contextmanager
    def _hook(self, event: str, handler):
        self.events.register_first(event, handler)
        try:
            yield
        finally:
            self.events.unregister(event, handler)

    def failing_request(self, kind: str):
        fired: list[int] = []

        def fail_once(request, **_):
            if fired:
                return None
            fired.append(1)
            if kind == "reset":
                raise botocore.exceptions.ConnectionClosedError(endpoint_url=request.url)
            body = b"<Error><Code>ServiceUnavailable</Code><Message>injected</Message></Error>"
            return botocore.awsrequest.AWSResponse(request.url, 503, {}, _Raw(body))

        return self._hook("before-send.s3", fail_once)

    def broken_stream(self):
        fired: list[int] = []

        def break_once(parsed, **_):
            if not fired and "Body" in parsed:
                fired.append(1)
                parsed["Body"]._raw_stream = _Breaking(parsed["Body"]._raw_stream, after=256 << 10)

        return self._hook("after-call.s3.GetObject", break_once)


class LocalFaults:
    """A network filesystem's transient errnos, from the next os.open."""

    @contextmanager
    def failing_request(self, kind: str):
        code = errno.ESTALE if kind == "unavailable" else errno.ECONNRESET
        real, fired = os.open, []

        def fail_once(*args, **kwargs):
            if not fired:
                fired.append(1)
                raise OSError(code, os.strerror(code))
            return real(*args, **kwargs)

        with mock.patch("os.open", fail_once):
            yield


@pytest.fixture
def s3_place(s3_bucket, request):
    def make(server: str = "a", prefix: str = "") -> S3Place:
        endpoint = request.getfixturevalue("moto_endpoint" if server == "a" else "moto_endpoint_b")
        region = "us-east-1" if server == "a" else "eu-west-1"
        return S3Place(s3_bucket(region, endpoint), prefix, endpoint_url=endpoint, region=region)
    return make


def test_a_directory_conforms(tmp_path):
    check_place(LocalPlace(tmp_path / "place"), faults=LocalFaults())


def test_a_directory_with_a_staging_directory_conforms(tmp_path):
    """The local repository's place (LocalStore): puts staged under tmp/, never listed."""
    place = LocalPlace(tmp_path / "place", staging="tmp")
    check_place(place, faults=LocalFaults())
    assert not [f for f in place.list_files() if f.path.startswith("tmp/")]


def test_s3_on_the_lean_client_conforms(s3_bucket, moto_endpoint, aws_env):
    """The repository's S3 place: the hot requests on the lean client, the rest on botocore."""
    store = S3Store(s3_bucket(), "lean", region="us-east-1", endpoint_url=moto_endpoint)
    assert isinstance(store._client, s3_lean.LeanS3Client)
    lean = S3Place(store.bucket, "lean", client=store._client)  # the store's, remembering versions
    check_place(lean)
    check_place(RetryingPlace(S3Place(store.bucket, "lean-again", client=store._client), sleep=lambda _: None))


def test_a_retrying_directory_conforms(tmp_path):
    check_place(RetryingPlace(LocalPlace(tmp_path / "place"), sleep=lambda _: None))


def test_s3_on_the_source_server_conforms(s3_place):
    place = s3_place("a")
    check_place(place, faults=S3Faults(place))


def test_s3_with_a_prefix_on_the_dr_server_conforms(s3_place):
    place = s3_place("b", "dr/copies")
    check_place(place, faults=S3Faults(place))


def test_a_retrying_s3_place_conforms(s3_place):
    check_place(RetryingPlace(s3_place("b", "wrapped"), sleep=lambda _: None))


def test_a_copy_across_endpoints_gets_through_a_503_and_a_reset_mid_stream(s3_place):
    """The exporter's case: source on one server, DR copy on the other, streamed through dr;
    the source's body breaks once mid-file and the target answers one 503."""
    src, dst = s3_place("a", "ckpt"), s3_place("b", "copies")
    data = os.urandom(11 << 20)
    src.put("run/step-1/__0_0.distcp", data)
    (listed,) = list(src.list_files("run"))
    waits: list[float] = []
    transfer = Transfer(RetryingPlace(src, sleep=waits.append), RetryingPlace(dst, sleep=waits.append),
                        part_size=5 << 20, max_buffer=16 << 20)
    try:
        with S3Faults(src).broken_stream(), S3Faults(dst).failing_request("unavailable"):
            done, failed = transfer.run([FileJob(listed.path, "step-1/__0_0.distcp", listed.size, listed)])
    finally:
        transfer.close()
    assert not failed and done[0].sha256 == hashlib.sha256(data).hexdigest()
    assert dst.get("step-1/__0_0.distcp") == data and len(waits) == 2


def test_permanent_s3_failures_are_not_retried(s3_place, moto_endpoint):
    waits: list[float] = []
    place = RetryingPlace(S3Place("dr-no-such-bucket", "", endpoint_url=moto_endpoint, region="us-east-1"),
                          sleep=waits.append)
    with pytest.raises(PermanentPlaceError, match="NoSuchBucket"):
        place.put("f", b"x")
    assert not waits


def test_a_reset_while_reading_a_body_is_transient_for_stores_and_places():
    reset = urllib3.exceptions.ProtocolError("Connection broken", ConnectionResetError(errno.ECONNRESET, "reset"))
    assert is_transient(reset) and is_transient(botocore.exceptions.ResponseStreamingError(error=reset))
    assert issubclass(TransientPlaceError, OSError)


def test_places_and_the_repository_store_share_one_client_configuration(s3_place, s3_bucket, moto_endpoint):
    place = s3_place("a")
    store = S3Store(s3_bucket(), region="us-east-1", endpoint_url=moto_endpoint)
    a, b = place.client.meta.config, store.place.client.meta.config  # (Object Lock calls use it)
    for setting in ("retries", "connect_timeout", "read_timeout", "s3", "request_checksum_calculation"):
        assert getattr(a, setting) == getattr(b, setting), setting
    lean = store._client  # the store's hot requests: the lean client waits as long as botocore
    assert (lean._read_timeout, s3_lean.CONNECT_TIMEOUT) == (a.read_timeout, a.connect_timeout)
    assert a.retries["total_max_attempts"] == 1  # retries are the wrappers' job
