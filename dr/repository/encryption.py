"""Encryption of secret-class content: age, X25519 recipients (docs/format.md, "Encryption").

The backup job holds only public keys (recipients), so a stolen CronJob or bucket credential
cannot decrypt anything. The private key (identity) is needed only to restore.
"""

from __future__ import annotations

import os

import pyrage

from dr.repository import agefile


class EncryptionError(Exception):
    pass


def parse_recipients(recipients: list[str]) -> list[pyrage.x25519.Recipient]:
    try:
        return [pyrage.x25519.Recipient.from_str(r.strip()) for r in recipients]
    except Exception as exc:
        raise EncryptionError(f"not an age X25519 public key: {exc}") from None


def encrypt(data: bytes, recipients: list[pyrage.x25519.Recipient]) -> bytes:
    if not recipients:
        raise EncryptionError("secret content and no recipients: refusing to store it unencrypted")
    # pyrage parsed the keys; the bytes go through agefile (OpenSSL's cipher, not pyrage's: why there)
    return agefile.encrypt(data, [agefile.recipient_key(str(r)) for r in recipients])


def decrypt(data: bytes, identities: list[pyrage.x25519.Identity]) -> bytes | bytearray:
    if not identities:
        raise EncryptionError(
            "this content is encrypted and no identity was given: set the plan's identity_env "
            "variable (default DR_AGE_IDENTITY_FILE) to the path of the age identity file")
    try:
        return agefile.decrypt(data, [str(i) for i in identities])
    except agefile.AgeError as exc:
        raise EncryptionError(f"cannot decrypt: {exc}") from None


def load_identities(path: str) -> list[pyrage.x25519.Identity]:
    """Read an age identity file (lines 'AGE-SECRET-KEY-1...'; '#' comments ignored)."""
    try:
        with open(path, encoding="utf-8") as handle:
            lines = [ln.strip() for ln in handle if ln.strip() and not ln.startswith("#")]
    except OSError as exc:
        raise EncryptionError(f"cannot read identity file {path}: {exc.strerror}") from None
    try:
        return [pyrage.x25519.Identity.from_str(line) for line in lines]
    except Exception:
        raise EncryptionError(f"{path}: not an age identity file") from None


def identities_from_env(variable: str) -> list[pyrage.x25519.Identity]:
    path = os.environ.get(variable)
    return load_identities(path) if path else []


def generate_identity() -> tuple[str, str]:
    """(private identity string, public recipient string): for the demo and tests."""
    identity = pyrage.x25519.Identity.generate()
    return str(identity), str(identity.to_public())
