"""One conformance suite for the store contract in dr/repository/stores/base.py.

Every backend runs the same tests: LocalStore on a temporary directory, the same over a
RetryingPlace and under CountingStore (wrappers must not change the contract), and S3Store over
real HTTP against two moto servers (us-east-1 on one, eu-west-1 with a key prefix on the
other). Then S3-only behaviour (Object Lock, checksums, error mapping, fallback), the
wrappers, and open_store.
"""

from __future__ import annotations

import base64
import hashlib
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import boto3
import botocore.config
import pytest

from dr.repository.stores.base import ObjectExists, ObjectMissing, Store, StoreError, TransientStoreError
from dr.repository.stores.counting import CountingStore
from dr.repository.stores.local import LocalStore
from dr.repository.stores.opening import open_store
from dr.repository.stores.placing import PlaceStore
from dr.kits.places.contract import Place, PlaceMissing, TransientPlaceError
from dr.kits.places.files import FileStat
from dr.kits.places.local import LocalPlace
from dr.kits.places.retrying import RetryingPlace
from dr.repository.stores.s3 import S3Store, from_url
from dr.kits.s3.clients import new_client
from dr.kits.s3.lean import LeanS3Client
from dr.kits.s3.signing import static_setup
from tests.fixtures_s3 import s3_client
from tests.harness.fakes3 import FakeS3, error_xml

BACKENDS = ["local", "local-wrapped", "s3-us-east-1", "s3-eu-west-1"]


@pytest.fixture(params=BACKENDS)
def store(request, tmp_path):
    kind = request.param
    if kind == "local":
        made: Store = LocalStore(str(tmp_path / "repo"))
    elif kind == "local-wrapped":
        place = RetryingPlace(LocalPlace(tmp_path / "repo", staging="tmp"), sleep=lambda _: None)
        made = CountingStore(PlaceStore(place, "file://wrapped", stages=True))
    else:
        make_bucket = request.getfixturevalue("s3_bucket")
        if kind == "s3-us-east-1":
            endpoint, region, prefix = request.getfixturevalue("moto_endpoint"), "us-east-1", ""
        else:
            endpoint, region, prefix = request.getfixturevalue("moto_endpoint_b"), "eu-west-1", "team/repo"
        made = S3Store(make_bucket(region, endpoint), prefix=prefix, region=region, endpoint_url=endpoint)
    yield made
    made.close()


def _put_many(store: Store, items: dict[str, bytes]) -> None:
    with ThreadPoolExecutor(max_workers=32) as pool:  # = the S3 client's connection pool
        list(pool.map(lambda kv: store.put(*kv), items.items()))


# --- the contract, clause by clause -----------------------------------------------------


def test_read_after_write(store):
    data = os.urandom(3000)
    store.put("data/ab/object", data)
    assert store.exists("data/ab/object")
    assert store.get("data/ab/object") == data
    assert ("data/ab/object", 3000) in set(store.list())
    with store.open("data/ab/object") as handle:
        assert handle.read() == data


def test_empty_object(store):
    store.put("empty", b"")
    assert store.get("empty") == b""
    assert dict(store.list()) == {"empty": 0}


def test_open_streams_in_pieces(store):
    data = os.urandom(3 * 1024 * 1024 + 17)
    store.put("big", data)
    pieces = []
    with store.open("big") as handle:
        while chunk := handle.read(256 * 1024):
            pieces.append(chunk)
    assert len(pieces) > 1 and b"".join(pieces) == data


def test_put_is_write_once(store):
    store.put("index/1", b"original")
    with pytest.raises(ObjectExists):
        store.put("index/1", b"replacement")
    with pytest.raises(ObjectExists):
        store.put("index/1", b"original")  # even the same bytes: the caller must know
    assert store.get("index/1") == b"original"
    assert dict(store.list("index/")) == {"index/1": 8}


def test_put_is_atomic_for_readers(store):
    data = os.urandom(4 * 1024 * 1024)
    seen: list[int] = []
    done = threading.Event()

    def reader():
        while not done.is_set():
            try:
                seen.append(len(store.get("atomic")))
            except ObjectMissing:
                seen.append(-1)

    thread = threading.Thread(target=reader)
    thread.start()
    try:
        store.put("atomic", data)
        reads_before = len(seen)
        while len(seen) < reads_before + 2:  # a read that started after the put returned
            time.sleep(0.001)
    finally:
        done.set()
        thread.join()
    assert set(seen) <= {-1, len(data)}
    assert seen[-1] == len(data)


def test_missing_objects(store):
    with pytest.raises(ObjectMissing):
        store.get("nothing/here")
    with pytest.raises(ObjectMissing):
        store.open("nothing/here")
    assert store.exists("nothing/here") is False
    assert not issubclass(ObjectMissing, TransientStoreError)  # never retried


def test_list_is_complete_across_pages(store):
    # > 1000 objects: S3 returns at most 1000 keys a page, so this needs the paginator.
    items = {f"many/{i:05d}": str(i).encode() for i in range(1100)}
    _put_many(store, {**items, "other/x": b"x", "manyx": b"y"})
    listed = list(store.list("many/"))
    assert len(listed) == len(set(listed)) == 1100  # each exactly once
    assert dict(listed) == {k: len(v) for k, v in items.items()}
    assert len(list(store.list())) == 1102


def test_list_by_prefix(store):
    for key in ("data/ab/1", "data/ab/2", "data/ac/1", "index/1", "dataset"):
        store.put(key, b"12345")
    assert sorted(k for k, _ in store.list("data/ab/")) == ["data/ab/1", "data/ab/2"]
    assert sorted(k for k, _ in store.list("data/")) == ["data/ab/1", "data/ab/2", "data/ac/1"]
    assert sorted(k for k, _ in store.list("data/a")) == ["data/ab/1", "data/ab/2", "data/ac/1"]
    assert sorted(k for k, _ in store.list("data")) == ["data/ab/1", "data/ab/2", "data/ac/1", "dataset"]
    assert list(store.list("zzz")) == []
    assert all(size == 5 for _, size in store.list())


def test_delete_is_idempotent(store):
    store.put("gone", b"bye")
    store.delete("gone")
    assert not store.exists("gone")
    with pytest.raises(ObjectMissing):
        store.get("gone")
    assert "gone" not in dict(store.list())
    store.delete("gone")
    store.delete("never/was")


INVALID_KEYS = ["", "/abs", "a/../b", "..", ".", "a/./b", "a//b", "a/", "with space", "caf\u00e9",
                "a\\b", "a\nb", "../escape"]


def test_invalid_keys_raise_value_error(store):
    for key in INVALID_KEYS:
        calls = [lambda: store.put(key, b"x"), lambda: store.get(key), lambda: store.open(key),
                 lambda: store.exists(key), lambda: store.delete(key)]
        for call in calls:
            with pytest.raises(ValueError):
                call()
    assert list(store.list()) == []  # nothing was touched


def test_concurrent_puts_one_winner(store):
    payloads = [bytes([i]) * (256 * 1024) for i in range(8)]
    for round_ in range(5):
        key = f"race/{round_}"
        barrier = threading.Barrier(len(payloads))
        outcomes: list[str] = []

        def writer(data):
            barrier.wait()
            try:
                store.put(key, data)
                outcomes.append("won")
            except ObjectExists:
                outcomes.append("exists")

        threads = [threading.Thread(target=writer, args=(p,)) for p in payloads]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert sorted(outcomes) == ["exists"] * 7 + ["won"]
        assert store.get(key) in payloads  # one input, whole


def test_a_published_batch_holds_every_object_whole(store):
    batch = store.batch()
    objects = {f"batched/{i}": os.urandom(100 + i) for i in range(20)}
    for key, data in objects.items():
        batch.put(key, data)
    assert batch.publish() == 0
    assert {key: store.get(key) for key in objects} == objects
    assert dict(store.list("batched/")) == {key: len(data) for key, data in objects.items()}
    assert batch.publish() == 0  # nothing left to publish


def test_a_batch_never_replaces_a_stored_object(store):
    store.put("taken", b"first")
    batch = store.batch()
    try:
        batch.put("taken", b"second")
        taken = batch.publish()
    except ObjectExists:  # a batch that puts at once refuses it there
        taken = 1
    assert taken == 1 and store.get("taken") == b"first"


def test_two_batches_racing_for_one_key_leave_one_whole_object(store):
    first, second = store.batch(), store.batch()
    outcomes = []
    for batch, data in ((first, b"a" * 5000), (second, b"b" * 5000)):
        try:
            batch.put("race/batched", data)
            outcomes.append(batch.publish())
        except ObjectExists:
            outcomes.append(1)
    assert sorted(outcomes) == [0, 1] and store.get("race/batched") in (b"a" * 5000, b"b" * 5000)


def test_a_local_batch_is_invisible_until_published_and_leaves_nothing_when_discarded(tmp_path):
    """The local store defers a batch's durability: until publish, its objects are files under
    tmp/ only (no reader sees them, no fsync was paid); discard removes them."""
    store = LocalStore(str(tmp_path / "repo"))
    batch = store.batch()
    batch.put("blobs/ab/abc", b"data")
    with pytest.raises(ObjectMissing):
        store.get("blobs/ab/abc")
    assert list(store.list("")) == [] and len(os.listdir(tmp_path / "repo" / "tmp")) == 1
    batch.discard()
    assert os.listdir(tmp_path / "repo" / "tmp") == [] and list(store.list("")) == []
    batch.put("blobs/ab/abd", b"more")
    assert batch.publish() == 0 and store.get("blobs/ab/abd") == b"more"
    assert os.listdir(tmp_path / "repo" / "tmp") == []


# --- S3 only -----------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["GOVERNANCE", "COMPLIANCE"])
def test_s3_object_lock_bucket(s3_bucket, moto_endpoint, mode):
    bucket = s3_bucket(object_lock=True)
    client = s3_client(moto_endpoint)
    client.put_object_lock_configuration(Bucket=bucket, ObjectLockConfiguration={
        "ObjectLockEnabled": "Enabled", "Rule": {"DefaultRetention": {"Mode": mode, "Days": 1}}})
    store = S3Store(bucket, prefix="repo", endpoint_url=moto_endpoint)
    store.put("data/1", b"locked")
    with pytest.raises(ObjectExists):
        store.put("data/1", b"overwrite")
    assert store.get("data/1") == b"locked"
    versions = client.list_object_versions(Bucket=bucket)["Versions"]
    assert len(versions) == 1  # the refused put did not add a version
    head = client.head_object(Bucket=bucket, Key="repo/data/1")
    assert head["ObjectLockMode"] == mode


CLIENTS = ["lean", "botocore"]


def _store(kind: str, bucket: str, endpoint: str, **kwargs) -> S3Store:
    """An S3Store on the lean client (what static test credentials get) or on botocore's."""
    if kind == "botocore":
        kwargs["client"] = new_client(boto3.session.Session(region_name="us-east-1"), endpoint)
    store = S3Store(bucket, endpoint_url=endpoint, **kwargs)
    assert isinstance(store._client, LeanS3Client) is (kind == "lean")
    return store


@pytest.mark.parametrize("kind", CLIENTS)
def test_s3_put_sends_digests(aws_env, kind):
    # moto does not verify Content-MD5 or checksums (checked: wrong ones are accepted), so
    # this proves the client sends the right ones; AWS rejects a mismatch with BadDigest.
    fake = FakeS3(lambda method, headers: (200, b""))
    try:
        data = os.urandom(1000)
        _store(kind, "bucket-x", fake.url).put("k", data)
        (headers,) = fake.headers
        assert headers["content-md5"] == base64.b64encode(hashlib.md5(data).digest()).decode()
        assert headers["x-amz-checksum-sha256"] == base64.b64encode(hashlib.sha256(data).digest()).decode()
        assert headers["if-none-match"] == "*"
        assert "x-amz-checksum-crc32" not in headers  # only the checksums dr passes
    finally:
        fake.close()


@pytest.mark.parametrize("kind,error", [("lean", "ChecksumMismatch"), ("botocore", "FlexibleChecksumError")])
def test_s3_get_verifies_the_stored_checksum(s3_bucket, moto_endpoint, kind, error):
    # Store an object whose recorded SHA-256 does not match its bytes (moto accepts that),
    # standing for bytes changed at rest or in transit: the read must fail, not return them.
    bucket = s3_bucket()
    wrong = base64.b64encode(hashlib.sha256(b"other bytes").digest()).decode()
    s3_client(moto_endpoint).put_object(Bucket=bucket, Key="k", Body=b"bytes",
                                        ChecksumAlgorithm="SHA256", ChecksumSHA256=wrong)
    with pytest.raises(TransientStoreError) as info:
        _store(kind, bucket, moto_endpoint).get("k")
    assert error in str(info.value)
    with pytest.raises(TransientStoreError) as info:  # and a stream, at its end
        with _store(kind, bucket, moto_endpoint).open("k") as stream:
            stream.read()
    assert error in str(info.value)


def test_s3_prefixes_do_not_overlap(s3_bucket, moto_endpoint):
    bucket = s3_bucket()
    a = S3Store(bucket, prefix="a", endpoint_url=moto_endpoint)
    ab = S3Store(bucket, prefix="ab/", endpoint_url=moto_endpoint)
    a.put("x", b"1")
    ab.put("x", b"22")
    assert dict(a.list()) == {"x": 1} and dict(ab.list()) == {"x": 2}


def test_s3_missing_bucket_is_permanent_and_names_it(aws_env, moto_endpoint):
    store = S3Store("dr-no-such-bucket", prefix="p", endpoint_url=moto_endpoint)
    with pytest.raises(StoreError) as info:
        store.get("k")
    assert not isinstance(info.value, (ObjectMissing, TransientStoreError))
    assert "s3://dr-no-such-bucket/p/k" in str(info.value) and "NoSuchBucket" in str(info.value)


def test_s3_description(aws_env):
    assert S3Store("b-1", "x/y").description == "s3://b-1/x/y"
    store = S3Store("b-1", endpoint_url="http://user:pw@127.0.0.1:9000")
    assert store.description == "s3://b-1 (endpoint http://127.0.0.1:9000)"


def test_s3_from_url(aws_env):
    store = from_url("s3://my-bucket/backups/prod/", region="eu-west-1")
    assert (store.bucket, store.description) == ("my-bucket", "s3://my-bucket/backups/prod")
    assert from_url("s3://my-bucket").description == "s3://my-bucket"
    for bad in ["s3://", "gs://b/x", "s3://b/x?y=1", "s3://b/../x"]:
        with pytest.raises(ValueError):
            from_url(bad)
    with pytest.raises(ValueError) as info:
        from_url("s3://AKID:hunter2@bucket/x")
    assert "hunter2" not in str(info.value)


@pytest.mark.parametrize("status,code,transient", [
    (503, "SlowDown", True), (500, "InternalError", True), (400, "RequestTimeout", True),
    (503, "ServiceUnavailable", True), (403, "AccessDenied", False), (400, "InvalidRequest", False),
])
@pytest.mark.parametrize("kind", CLIENTS)
def test_s3_error_mapping_single_request(aws_env, status, code, transient, kind):
    fake = FakeS3(lambda method, headers: (status, error_xml(code)))
    try:
        store = _store(kind, "bucket-x", fake.url)
        with pytest.raises(StoreError) as info:
            store.get("some/key")
        assert isinstance(info.value, TransientStoreError) is transient
        assert not isinstance(info.value, ObjectMissing)
        assert "s3://bucket-x/some/key" in str(info.value) and code in str(info.value)
        assert len(fake.requests) == 1  # the client does not retry; RetryingPlace does
    finally:
        fake.close()


@pytest.mark.parametrize("kind", CLIENTS)
def test_s3_errors_never_show_credentials(aws_env, monkeypatch, kind):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDMARKER1234")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "SECRETMARKER5678")
    extra = "<AWSAccessKeyId>AKIDMARKER1234</AWSAccessKeyId><StringToSign>SECRETMARKER5678</StringToSign>"
    fake = FakeS3(lambda method, headers: (403, error_xml("SignatureDoesNotMatch", extra)))
    try:
        with pytest.raises(StoreError) as info:
            _store(kind, "bucket-x", fake.url).put("k", b"v")
        texts, exc = [], info.value
        while exc is not None:
            texts.append(f"{exc} {exc!r}")
            exc = exc.__cause__
        assert "SignatureDoesNotMatch" in texts[0]
        assert not any("MARKER" in text for text in texts)
    finally:
        fake.close()


@pytest.mark.parametrize("kind", CLIENTS)
def test_s3_connection_and_read_timeouts_are_transient(aws_env, kind):
    closed_port = _store(kind, "bucket-x", "http://127.0.0.1:9")  # discard port: refused
    with pytest.raises(TransientStoreError):
        closed_port.exists("k")
    slow = threading.Event()
    fake = FakeS3(lambda method, headers: (slow.wait(2), (200, b"late"))[1])
    try:
        if kind == "botocore":
            config = botocore.config.Config(retries={"total_max_attempts": 1}, read_timeout=0.3,
                                            s3={"addressing_style": "path"})
            client = boto3.session.Session().client("s3", endpoint_url=fake.url, config=config)
        else:
            client = LeanS3Client(static_setup(None, fake.url, None), lambda: None, read_timeout=0.3)
        with pytest.raises(TransientStoreError):
            S3Store("bucket-x", client=client).get("k")
    finally:
        slow.set()
        fake.close()


@pytest.mark.parametrize("kind", CLIENTS)
def test_s3_falls_back_when_conditional_put_not_implemented(aws_env, kind):
    stored: set[str] = set()

    def respond(method, headers):
        if method == "PUT" and headers.get("If-None-Match"):
            return 501, error_xml("NotImplemented")
        if method == "HEAD":
            return (200 if stored else 404), b""
        stored.add("k")
        return 200, b""

    fake = FakeS3(respond)
    try:
        store = _store(kind, "bucket-x", fake.url)
        store.put("k", b"v")
        with pytest.raises(ObjectExists):
            store.put("k", b"v2")
        assert [m for m, _ in fake.requests] == ["PUT", "HEAD", "PUT", "HEAD"]
    finally:
        fake.close()


# --- wrappers ------------------------------------------------------------------------------


class _FlakyPlace(Place):
    """A tiny in-memory fake place (enough for the store's retry semantics over RetryingPlace;
    the real places are covered above and by the place suite): each method fails with
    TransientPlaceError `failures` times, then works."""

    url = "flaky://"

    def __init__(self, failures: int = 0, store_then_time_out: bool = False):
        self.objects: dict[str, bytes] = {}
        self.failures = failures
        self.calls: dict[str, int] = {}
        self.store_then_time_out = store_then_time_out

    def _tick(self, name: str) -> None:
        self.calls[name] = self.calls.get(name, 0) + 1
        if self.calls[name] <= self.failures:
            raise TransientPlaceError(f"{name} throttled")

    def put(self, path, data, *, create_only=False, sha256_b64=""):
        if create_only and path in self.objects:
            return False
        if self.store_then_time_out and not self.calls.get("put"):
            self.calls["put"] = 1
            self.objects[path] = data  # the server stored it, the client timed out
            raise TransientPlaceError("read timeout")
        self._tick("put")
        self.objects[path] = data
        return True

    def get(self, path):
        self._tick("get")
        return self.objects.get(path)

    def head(self, path):
        self._tick("exists")
        return (len(self.objects[path]), "", "") if path in self.objects else None

    def list_files(self, prefix=""):
        self.calls["list"] = self.calls.get("list", 0) + 1
        items = sorted(self.objects.items())
        for index, (path, data) in enumerate(items):
            if index == 1 and self.calls["list"] <= self.failures:
                raise TransientPlaceError("connection reset mid-listing")
            yield FileStat(path, len(data), 0)

    def delete(self, path):
        self._tick("delete")
        self.objects.pop(path, None)

    def open_read(self, path, expect=None, offset=0):
        raise PlaceMissing(path)

    url_of = location = read = version = delete_many = pending_uploads = abort = writer = None


def _retrying(inner: _FlakyPlace, **kwargs) -> PlaceStore:
    return PlaceStore(RetryingPlace(inner, **{"sleep": lambda _: None, **kwargs}), "flaky://")


def test_retrying_recovers_from_transient_failures():
    inner, sleeps = _FlakyPlace(failures=3), []
    store = _retrying(inner, attempts=5, base_delay=0.1, max_delay=2.0, sleep=sleeps.append)
    store.put("a", b"1")
    assert inner.calls["put"] == 4 and inner.objects == {"a": b"1"}
    assert len(sleeps) == 3 and all(0 <= s <= 2.0 for s in sleeps)
    assert store.exists("a") and store.get("a") == b"1"
    store.delete("a")
    assert inner.calls["delete"] == 4


def test_retrying_gives_up_after_the_limit():
    inner = _FlakyPlace(failures=100)
    store = _retrying(inner, attempts=4)
    with pytest.raises(TransientStoreError):
        store.get("a")
    assert inner.calls["get"] == 4


def test_retrying_does_not_retry_permanent_errors():
    inner = _FlakyPlace()
    store = _retrying(inner)
    with pytest.raises(ObjectMissing):
        store.open("missing")
    with pytest.raises(ObjectMissing):
        store.get("missing")
    assert inner.calls["get"] == 1


def test_retrying_list_yields_each_key_once_after_failure():
    inner = _FlakyPlace()
    inner.objects = {"a": b"1", "b": b"22", "c": b"333"}
    inner.failures = 2
    store = _retrying(inner)
    assert list(store.list()) == [("a", 1), ("b", 2), ("c", 3)]
    assert inner.calls["list"] == 3


def test_retrying_put_after_timeout_finds_its_own_object():
    inner = _FlakyPlace(store_then_time_out=True)
    _retrying(inner).put("k", b"payload")  # attempt 1 stored then timed out; attempt 2 finds it taken
    assert inner.objects == {"k": b"payload"}


def test_retrying_put_after_timeout_with_other_bytes_is_object_exists():
    inner = _FlakyPlace(store_then_time_out=True)
    original = inner.put

    def put(path, data, **kwargs):
        if not inner.calls.get("put"):
            inner.calls["put"] = 1
            inner.objects[path] = b"someone else"  # another writer got there first
            raise TransientPlaceError("timeout")
        return original(path, data, **kwargs)

    inner.put = put
    with pytest.raises(ObjectExists):
        _retrying(inner).put("k", b"mine")


def test_retrying_put_existing_on_first_attempt_is_object_exists():
    inner = _FlakyPlace()
    inner.objects["k"] = b"same"
    with pytest.raises(ObjectExists):
        _retrying(inner).put("k", b"same")


def test_counting_store_counts(tmp_path):
    store = CountingStore(LocalStore(str(tmp_path)))
    store.put("a", b"12345")
    store.put("b", b"123")
    with pytest.raises(ObjectExists):
        store.put("a", b"12345")
    assert store.get("a") == b"12345"
    with store.open("b") as handle:
        assert handle.read() == b"123"
    assert len(list(store.list())) == 2
    store.delete("b")
    assert store.counts() == {"puts": 3, "bytes_put": 13, "puts_refused": 1, "gets": 2,
                              "bytes_got": 8, "lists": 1, "deletes": 1}
    store.reset()
    assert set(store.counts().values()) == {0}


def test_counting_store_is_thread_safe(tmp_path):
    store = CountingStore(LocalStore(str(tmp_path)))
    _put_many(store, {f"k/{i}": b"xy" for i in range(400)})
    assert (store.puts, store.bytes_put) == (400, 800)


# --- open_store ----------------------------------------------------------------------------


def test_open_store_chooses_the_backend(tmp_path, aws_env):
    plain = open_store("repo", base_dir=str(tmp_path))
    assert isinstance(plain, LocalStore) and plain.root == str(tmp_path / "repo")
    url = open_store(f"file://{tmp_path}/other", base_dir="/elsewhere")
    assert isinstance(url, LocalStore) and url.root == str(tmp_path / "other")
    s3 = open_store("s3://bucket-y/pre", region="eu-west-1", endpoint_url="http://127.0.0.1:1")
    assert isinstance(s3, S3Store) and isinstance(s3.place, RetryingPlace)
    assert s3.description == "s3://bucket-y/pre (endpoint http://127.0.0.1:1)"
    for bad in ["gs://bucket/x", "file://remote-host/x", ""]:
        with pytest.raises(ValueError):
            open_store(bad)


# --- the local layout (docs/format.md section 3) -------------------------------------------


def test_local_layout_is_the_format_s(tmp_path, monkeypatch):
    """Objects are files at their keys; a put stages under tmp/ only (never beside the object),
    tmp/ is never listed, and a repository's files written by hand (an older dr) read as objects."""
    root = tmp_path / "repo"
    store = LocalStore(str(root))
    staged: list[str] = []
    real_link = os.link

    def link(src, dst, *args, **kwargs):
        staged.append(os.path.relpath(src, root))
        return real_link(src, dst, *args, **kwargs)

    monkeypatch.setattr(os, "link", link)
    store.put("blobs/ab/x", b"data")
    assert [os.path.dirname(s) for s in staged] == ["tmp"] and os.listdir(root / "tmp") == []
    assert os.listdir(root / "blobs" / "ab") == ["x"] and (root / "blobs/ab/x").read_bytes() == b"data"
    (root / "tmp" / "0123abcd").write_bytes(b"a crashed writer's")
    (root / "snapshots").mkdir()
    (root / "snapshots" / "old").write_bytes(b"written before")
    assert dict(store.list()) == {"blobs/ab/x": 4, "snapshots/old": 14}
    assert store.get("snapshots/old") == b"written before"
    with pytest.raises(ValueError):
        store.put("tmp/x", b"reserved")
    assert store.clear_staging() == 1 and os.listdir(root / "tmp") == []


def test_a_read_only_store_leaves_no_trace(tmp_path):
    store = LocalStore(str(tmp_path / "absent"))
    assert list(store.list()) == [] and not store.exists("config") and store.clear_staging() == 0
    with pytest.raises(ObjectMissing):
        store.get("config")
    assert not (tmp_path / "absent").exists()
