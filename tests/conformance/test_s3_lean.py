"""The lean S3 client (dr/kits/s3/lean.py): when it is chosen, that it signs
exactly as botocore does, sends what botocore sends, and hands over to botocore when it must.

The store contract suite (test_store_contract.py) runs every S3 clause on it already: its
static test credentials are what the lean client serves.
"""

from __future__ import annotations

import os

import boto3
import pytest
from botocore.auth import S3SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from dr.repository.stores.base import StoreError, TransientStoreError
from dr.repository.stores.s3 import S3Store
from dr.kits.s3.clients import new_client
from dr.kits.s3.lean import LeanS3Client
from dr.kits.s3.signing import EMPTY_SHA256, canonical_query, quote_path, sign, static_setup
from tests.harness.fakes3 import FakeS3, error_xml

KEYS = {"AWS_ACCESS_KEY_ID": "AKIDEXAMPLE", "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"}


def _env(tmp_path, **extra) -> dict:
    return {**KEYS, "AWS_DEFAULT_REGION": "eu-west-1", "AWS_CONFIG_FILE": str(tmp_path / "none"), **extra}


def test_static_keys_in_the_environment_choose_the_lean_client(tmp_path):
    setup = static_setup(None, "http://127.0.0.1:9000/", None, _env(tmp_path, AWS_SESSION_TOKEN="tok"))
    assert (setup.endpoint, setup.region, setup.token) == ("http://127.0.0.1:9000", "eu-west-1", "tok")
    assert static_setup("us-east-2", None, None, _env(tmp_path)).endpoint == "https://s3.us-east-2.amazonaws.com"


@pytest.mark.parametrize("change", [
    {"profile": "prod"}, {"AWS_PROFILE": "prod"}, {"HTTPS_PROXY": "http://proxy:3128"},
    {"AWS_ENDPOINT_URL_S3": "http://elsewhere"}, {"AWS_USE_FIPS_ENDPOINT": "true"},
    {"DR_S3_CLIENT": "botocore"}, {"AWS_SECRET_ACCESS_KEY": ""}, {"AWS_DEFAULT_REGION": ""},
    {"region": "cn-north-1"}, {"region": "us-gov-west-1"},
])
def test_anything_but_a_static_setup_goes_to_botocore(tmp_path, change):
    change = dict(change)
    profile, region = change.pop("profile", None), change.pop("region", None)
    env = _env(tmp_path, **change)
    assert static_setup(region, None if region else "http://127.0.0.1:9000", profile, env) is None


def test_a_config_file_with_more_than_a_region_goes_to_botocore(tmp_path):
    config = tmp_path / "config"
    config.write_text("[default]\nregion = ap-south-1\noutput = json\n")
    env = _env(tmp_path, AWS_CONFIG_FILE=str(config), AWS_DEFAULT_REGION="")
    assert static_setup(None, None, None, env).region == "ap-south-1"
    config.write_text("[default]\nregion = ap-south-1\nca_bundle = /etc/corp.pem\n")
    assert static_setup(None, None, None, env) is None
    config.write_text("[default]\nregion = ap-south-1\ns3 =\n  addressing_style = virtual\n")
    assert static_setup(None, None, None, env) is None


@pytest.mark.parametrize("method,key,query,headers,payload", [
    ("GET", "repo/config", {}, {"x-amz-checksum-mode": "ENABLED"}, EMPTY_SHA256),
    ("PUT", "repo/blobs/ab/ab12", {}, {"content-md5": "1B2M2Y8AsgTpgAmY7PhCfg==", "if-none-match": "*",
                                      "x-amz-checksum-sha256": "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=",
                                      "content-length": "0"}, EMPTY_SHA256),
    ("GET", "", {"list-type": "2", "prefix": "repo/locks/", "encoding-type": "url",
                 "continuation-token": "1/2+3=="}, {}, EMPTY_SHA256),
    ("HEAD", "odd key/ü+~(x)", {}, {}, EMPTY_SHA256),
])
@pytest.mark.parametrize("token", ["", "session/token+=="])
def test_the_signature_is_botocores(tmp_path, method, key, query, headers, payload, token):
    setup = static_setup("eu-west-1", "https://s3.example.net:8443", None, _env(tmp_path, AWS_SESSION_TOKEN=token))
    path = quote_path(f"/bucket-1/{key}" if key else "/bucket-1")
    signed = sign(setup, method, "s3.example.net:8443", path, query, headers, payload, now=1764550000.0)
    url = f"https://s3.example.net:8443{path}" + (f"?{canonical_query(query)}" if query else "")
    request = AWSRequest(method=method, url=url, headers={k: v for k, v in signed.items() if k != "authorization"})
    request.context["timestamp"] = signed["x-amz-date"]
    auth = S3SigV4Auth(Credentials(KEYS["AWS_ACCESS_KEY_ID"], KEYS["AWS_SECRET_ACCESS_KEY"], token or None),
                       "s3", "eu-west-1")
    expected = auth.signature(auth.string_to_sign(request, auth.canonical_request(request)), request)
    assert signed["authorization"].endswith(f"Signature={expected}")
    assert ("x-amz-security-token" in signed) is bool(token)


def test_both_clients_request_the_same_paths(aws_env):
    # what the server sees: the same quoting of a key (store keys are plain, but the client
    # must not depend on it), the same listing query
    seen = {}
    for kind in ("lean", "botocore"):
        fake = FakeS3(lambda method, headers: (200, b"") if method == "HEAD" else (200, b"<ListBucketResult/>"))
        try:
            client = new_client(boto3.session.Session(), fake.url) if kind == "botocore" else None
            store = S3Store("bucket-x", prefix="p", endpoint_url=fake.url, client=client)
            store._client.head_object(Bucket="bucket-x", Key="odd key/\u00fc+~(x)")
            assert list(store.list("locks/")) == []
            seen[kind] = fake.requests
        finally:
            fake.close()
    assert seen["lean"][0] == seen["botocore"][0] == ("HEAD", "/bucket-x/odd%20key/%C3%BC%2B~%28x%29")
    lean_list, boto_list = seen["lean"][1][1], seen["botocore"][1][1]
    assert sorted(lean_list.split("?")[1].split("&")) == sorted(boto_list.split("?")[1].split("&"))


def test_a_redirect_hands_the_store_to_botocore(aws_env):
    # AWS answers a request to the wrong region with a redirect, which botocore follows by
    # itself: the lean client gives the request (and every later one) to botocore instead.
    answers = iter([(301, error_xml("PermanentRedirect")), (200, b"v"), (200, b"w")])
    fake = FakeS3(lambda method, headers: next(answers))
    try:
        store = S3Store("bucket-x", endpoint_url=fake.url)
        assert isinstance(store._client, LeanS3Client)
        assert store.get("k") == b"v"
        assert store.get("k") == b"w"
        agents = [h.get("user-agent", "") for h in fake.headers]
        assert "Botocore" not in agents[0] and all("Botocore" in a for a in agents[1:])
    finally:
        fake.close()


def test_object_lock_calls_use_botocore_and_reads_stay_lean(s3_bucket, moto_endpoint):
    store = S3Store(s3_bucket(object_lock=True), endpoint_url=moto_endpoint)
    assert store.object_lock_enabled() is True
    assert store._client._botocore_client is not None  # built for the Object Lock call
    store.put("k", os.urandom(10))
    assert store.exists("k") and store._client._switched is False


def test_a_big_object_streams(s3_bucket, moto_endpoint):
    store = S3Store(s3_bucket(), endpoint_url=moto_endpoint)
    data = os.urandom(5 << 20)
    store.put("big", data)
    with store.open("big") as handle:
        assert handle.read(1000) == data[:1000]
        assert handle.read() == data[1000:]
    assert store.get("big") == data


def test_a_kept_alive_connection_serves_the_next_request(aws_env):
    # (moto's server closes every connection; this one keeps them, as S3 does)
    body = os.urandom(3 << 20)  # more than the reader's 1 MiB buffer
    fake = FakeS3(lambda method, headers: (200, body))
    try:
        store = S3Store("bucket-x", endpoint_url=fake.url)
        with store.open("a") as handle:
            assert handle.read(2) == body[:2]  # closed half read: that connection is not reused
        assert [store.get("b"), store.exists("c"), store.get("d")] == [body, True, body]
        assert len(store._client._idle) == 1 and len(set(fake.peers)) == 2
    finally:
        fake.close()


def _self_signed(tmp_path, name: str) -> tuple[str, str]:
    """(certificate, key) files of a self-signed certificate for 127.0.0.1."""
    import ipaddress
    from datetime import datetime, timedelta, timezone

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.now(timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(subject).issuer_name(subject).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - timedelta(days=1))
            .not_valid_after(now + timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                           critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    cert_file, key_file = tmp_path / f"{name}.pem", tmp_path / f"{name}.key"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return str(cert_file), str(key_file)


def test_https_verifies_against_aws_ca_bundle(aws_env, tmp_path, monkeypatch):
    # AWS_CA_BUNDLE is botocore's setting for a private CA; the lean client honours it, and a
    # certificate that does not verify is a permanent error, not one to retry
    served, other = _self_signed(tmp_path, "served"), _self_signed(tmp_path, "other")
    fake = FakeS3(lambda method, headers: (200, b"over tls"), tls=served)
    try:
        monkeypatch.setenv("AWS_CA_BUNDLE", served[0])
        assert S3Store("bucket-x", endpoint_url=fake.url).get("k") == b"over tls"
        monkeypatch.setenv("AWS_CA_BUNDLE", other[0])
        with pytest.raises(StoreError) as info:
            S3Store("bucket-x", endpoint_url=fake.url).get("k")
        assert not isinstance(info.value, TransientStoreError)
        assert "SSLCertVerificationError" in str(info.value)
    finally:
        fake.close()
