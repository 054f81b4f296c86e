"""A certificate's own bytes, read with `cryptography`: validity, names, fingerprint, key match.

Expiry is judged from these facts, never from what DescribeCertificate says: a status field
can lag or be wrong, the signed NotAfter cannot.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.x509.oid import NameOID


class CertificateUnreadable(Exception):
    """The PEM is not an X.509 certificate (or a key is not a private key)."""


@dataclass(frozen=True)
class LeafFacts:
    not_before: datetime  # UTC, aware
    not_after: datetime
    serial: str  # hex
    sha256: str  # of the DER encoding: the certificate's identity across regions
    names: tuple[str, ...]  # DNS names of the SAN extension, else the subject's CN


def leaf(pem: str) -> LeafFacts:
    """The first certificate of `pem` (ACM's `Certificate`, without the chain)."""
    try:
        cert = x509.load_pem_x509_certificate(pem.encode())
    except ValueError as exc:
        raise CertificateUnreadable(f"not a PEM X.509 certificate: {exc}") from None
    digest = cert.fingerprint(hashes.SHA256()).hex()
    return LeafFacts(cert.not_valid_before_utc, cert.not_valid_after_utc, format(cert.serial_number, "x"),
                     digest, _names(cert))


def _names(cert: x509.Certificate) -> tuple[str, ...]:
    try:
        sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        names = sans.get_values_for_type(x509.DNSName)
    except x509.ExtensionNotFound:
        names = []
    if not names:
        names = [str(a.value) for a in cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)]
    return tuple(sorted({n.lower() for n in names}))


def plain_private_key(pem: str, passphrase: bytes) -> bytes:
    """ExportCertificate's encrypted PKCS#8 key as an unencrypted PKCS#8 PEM (what
    ImportCertificate takes); it lives only in secret-class content, encrypted by dr."""
    try:
        key = serialization.load_pem_private_key(pem.encode(), password=passphrase)
    except (ValueError, TypeError) as exc:
        raise CertificateUnreadable(f"the exported private key does not open: {exc}") from None
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def key_matches(certificate_pem: str, key_pem: bytes) -> bool:
    """Whether the private key is the certificate's (same public key)."""
    try:
        key = serialization.load_pem_private_key(key_pem, password=None)
        cert = x509.load_pem_x509_certificate(certificate_pem.encode())
    except (ValueError, TypeError):
        return False
    der = serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    return key.public_key().public_bytes(*der) == cert.public_key().public_bytes(*der)
