"""moto's ACM (and classic ELB, which fills InUseBy) over HTTP, and certificates made with `cryptography`.

One moto server for this folder, reset before each test (only these tests use it), so each test
sees exactly the certificates it imported. A certificate authority signs every leaf: a chain
like a real one, and a leaf whose validity the test chooses.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

import boto3
import pytest
import requests
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import NameOID

from tests.exporters.conftest import harness  # noqa: F401  (the repository round-trip harness)
from tests.servers import moto_server

ACCOUNT = "123456789012"  # moto's default account


@pytest.fixture(scope="session")
def acm_server():
    with moto_server() as server:
        yield f"http://127.0.0.1:{server.port}"


@pytest.fixture
def acm_endpoint(acm_server, aws_env):
    requests.post(f"{acm_server}/moto-api/reset", timeout=10).raise_for_status()
    return acm_server


@functools.lru_cache(maxsize=None)
def acm_client(endpoint: str, region: str, service: str = "acm"):
    """An admin client for setting certificates up (cached: making a client costs ~0.1 s)."""
    return boto3.client(service, region_name=region, endpoint_url=endpoint)


@dataclass
class Leaf:
    certificate: bytes
    chain: bytes
    key: bytes
    not_after: datetime


def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


@functools.lru_cache(maxsize=1)
def authority():
    """(key, certificate) of a test CA, made once."""
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.now(timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(_name("dr test CA")).issuer_name(_name("dr test CA"))
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - timedelta(days=400)).not_valid_after(now + timedelta(days=3650))
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True).sign(key, hashes.SHA256()))
    return key, cert


@functools.lru_cache(maxsize=4)
def _leaf_key(n: int):
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def make_leaf(names: list[str], *, days_left: float, key_number: int = 0) -> Leaf:
    """A leaf for `names`, signed by the CA, valid until now + days_left (negative: expired)."""
    ca_key, ca = authority()
    key = _leaf_key(key_number)
    now = datetime.now(timezone.utc)
    not_after = (now + timedelta(days=days_left)).replace(microsecond=0)
    cert = (x509.CertificateBuilder().subject_name(_name(names[0])).issuer_name(ca.subject)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(min(now, not_after) - timedelta(days=90)).not_valid_after(not_after)
            .add_extension(x509.SubjectAlternativeName([x509.DNSName(n) for n in names]), critical=False)
            .sign(ca_key, hashes.SHA256()))
    pem = serialization.Encoding.PEM
    return Leaf(cert.public_bytes(pem), ca.public_bytes(pem),
                key.private_bytes(pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()), not_after)


def import_leaf(endpoint: str, region: str, leaf: Leaf) -> str:
    return acm_client(endpoint, region).import_certificate(
        Certificate=leaf.certificate, CertificateChain=leaf.chain, PrivateKey=leaf.key)["CertificateArn"]


def put_in_use(endpoint: str, region: str, arn: str, name: str) -> None:
    """A classic load balancer with an HTTPS listener on the certificate: moto fills InUseBy."""
    elb = acm_client(endpoint, region, "elb")
    elb.create_load_balancer(LoadBalancerName=name, AvailabilityZones=[f"{region}a"], Listeners=[
        {"Protocol": "HTTPS", "LoadBalancerPort": 443, "InstanceProtocol": "HTTP", "InstancePort": 80,
         "SSLCertificateId": arn}])


def options(endpoint: str, **extra) -> dict:
    return {"regions": ["us-east-1", "us-west-2"], "endpoint_url": endpoint, **extra}
