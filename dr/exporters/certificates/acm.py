"""Talking to AWS Certificate Manager (boto3): listing, describing, reading and importing.

ListCertificates returns only RSA_1024 and RSA_2048 certificates unless it is asked for the
other key types, so every call names them all (KEY_TYPES): an EC certificate is never left
out silently. Private keys are read only by `export_private` (ExportCertificate, which only
PRIVATE certificates and public ones created exportable allow), with a one-time passphrase
made here and used at once to open the key: the passphrase never leaves this process.
"""

from __future__ import annotations

import secrets
from typing import Any, Iterator

from dr.exporters.certificates.options import CertificatesOptions
from dr.exporters.certificates.parsing import plain_private_key

KEY_TYPES = ["RSA_1024", "RSA_2048", "RSA_3072", "RSA_4096", "EC_prime256v1", "EC_secp384r1", "EC_secp521r1"]


def errors() -> tuple[type[BaseException], ...]:
    """What an ACM call raises. boto3 and botocore are imported on first use, not with the
    exporter: validating a plan (`dr audit`, `dr plugins`) need not pay ~0.3 s for them."""
    import botocore.exceptions

    return (botocore.exceptions.ClientError, botocore.exceptions.BotoCoreError)


class AcmUnavailable(Exception):
    """An ACM call failed (credentials, permissions, the endpoint, a missing certificate)."""


def client(options: CertificatesOptions, region: str):
    import boto3
    import botocore.config

    config = botocore.config.Config(connect_timeout=options.timeout_seconds, read_timeout=options.timeout_seconds,
                                    retries={"max_attempts": 3, "mode": "standard"})
    return boto3.session.Session().client("acm", region_name=region, endpoint_url=options.endpoint_url,
                                          config=config)


def reason(exc: Exception) -> str:
    if isinstance(exc, errors()[0]):
        error = exc.response.get("Error", {})
        return f"{error.get('Code', 'ClientError')}: {error.get('Message', '')}".strip()
    return f"{type(exc).__name__}: {exc}"


def certificate_arns(acm) -> list[str]:
    """Every certificate of the region, whatever its status or key type, by ARN."""
    try:
        arns = []
        for page in acm.get_paginator("list_certificates").paginate(Includes={"keyTypes": KEY_TYPES}):
            arns += [c["CertificateArn"] for c in page.get("CertificateSummaryList", [])]
        return sorted(arns)
    except errors() as exc:
        raise AcmUnavailable(reason(exc)) from None


def describe(acm, arn: str) -> dict[str, Any]:
    try:
        return acm.describe_certificate(CertificateArn=arn)["Certificate"]
    except errors() as exc:
        raise AcmUnavailable(f"{arn}: {reason(exc)}") from None


def pem(acm, arn: str) -> tuple[str, str]:
    """(the certificate, its chain) as PEM; a certificate still pending validation has none."""
    try:
        answer = acm.get_certificate(CertificateArn=arn)
    except errors() as exc:
        raise AcmUnavailable(f"{arn}: {reason(exc)}") from None
    return answer.get("Certificate", ""), answer.get("CertificateChain", "")


def export_private(acm, arn: str) -> bytes:
    """The certificate's private key, unencrypted PKCS#8 PEM (for secret-class content only)."""
    passphrase = secrets.token_urlsafe(24).encode()
    try:
        answer = acm.export_certificate(CertificateArn=arn, Passphrase=passphrase)
    except errors() as exc:
        raise AcmUnavailable(f"{arn}: {reason(exc)}") from None
    return plain_private_key(answer["PrivateKey"], passphrase)


def certificates(acm) -> Iterator[tuple[str, dict[str, Any]]]:
    """(ARN, DescribeCertificate) of every certificate of the region."""
    for arn in certificate_arns(acm):
        yield arn, describe(acm, arn)


def import_certificate(acm, certificate: str, chain: str, key: bytes, arn: str | None = None) -> str:
    """Import (or, given `arn`, re-import into that certificate); the ARN it has."""
    arguments: dict[str, Any] = {"Certificate": certificate.encode(), "PrivateKey": key}
    if chain.strip():
        arguments["CertificateChain"] = chain.encode()
    if arn:
        arguments["CertificateArn"] = arn
    try:
        return acm.import_certificate(**arguments)["CertificateArn"]
    except errors() as exc:
        raise AcmUnavailable(reason(exc)) from None
