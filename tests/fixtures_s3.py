"""S3 fixtures: moto servers over real HTTP, and a fresh bucket per test.

Two independent moto servers stand for two failure domains (a different endpoint is a
different server that can fail alone); regions us-east-1 and eu-west-1 stand for two regions.
moto keeps state for the life of its process, so every test gets its own uniquely named
buckets instead of resetting a server other tests may be using.
Credentials are fake and set only in the test's environment (monkeypatch), and the shared
AWS config/credential files are pointed away so a developer's real profile is never read.
"""

from __future__ import annotations

import functools
import uuid

import boto3
import pytest

from dr.kits.s3.clients import new_client
from tests.servers import moto_server


@pytest.fixture(scope="session")
def moto_endpoint():
    with moto_server() as server:
        yield f"http://127.0.0.1:{server.port}"


@pytest.fixture(scope="session")
def moto_endpoint_b():
    with moto_server() as server:
        yield f"http://127.0.0.1:{server.port}"


@pytest.fixture
def aws_env(monkeypatch, tmp_path):
    for name in ("AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN",
                 "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_ROLE_ARN", "AWS_WEB_IDENTITY_TOKEN_FILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-aws-credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")


@functools.lru_cache(maxsize=None)
def s3_client(endpoint: str, region: str = "us-east-1"):
    """An admin client for setting buckets up (cached: making a client costs ~0.1 s)."""
    return new_client(boto3.session.Session(region_name=region), endpoint)


@pytest.fixture
def s3_bucket(aws_env, moto_endpoint):
    """make(region="us-east-1", endpoint=None, object_lock=False) -> a new empty bucket's name.

    endpoint defaults to moto_endpoint; pass moto_endpoint_b for the other server.
    """

    def make(region: str = "us-east-1", endpoint: str | None = None, object_lock: bool = False) -> str:
        name = f"dr-test-{uuid.uuid4().hex[:20]}"
        kwargs = {"Bucket": name}
        if region != "us-east-1":  # S3 rejects an explicit us-east-1 constraint
            kwargs["CreateBucketConfiguration"] = {"LocationConstraint": region}
        if object_lock:
            kwargs["ObjectLockEnabledForBucket"] = True
        s3_client(endpoint or moto_endpoint, region).create_bucket(**kwargs)
        return name

    return make


@pytest.fixture
def fault_proxy():
    """make(endpoint, rate=0.1, seed=0, **kw) -> a started FaultProxy in front of `endpoint`
    (tests/harness/faultproxy.py); every proxy made is closed after the test."""
    from tests.harness.faultproxy import FaultProxy

    made: list[FaultProxy] = []

    def make(endpoint: str, rate: float = 0.1, seed: int = 0, **kwargs) -> FaultProxy:
        made.append(FaultProxy(endpoint, rate=rate, seed=seed, **kwargs).start())
        return made[-1]

    yield make
    for proxy in made:
        proxy.close()
