"""Sealed names: a secret artifact's name and facts, encrypted like its content (format.md 8.1).

A secret's name often says what it opens (`prod-db-root-password`), and the repository is
read by people who must not learn it. So a secret artifact's catalog line holds, in place of
its identity, a keyed digest of it (what the next backup matches its parent by), and its real
identity and meta travel age-encrypted to the plan's recipients in meta["sealed"].

The key of those digests, the name key, is derived from the recipients' public keys: the
backup job holds them and no identity, and the repository holds neither them nor the key.
Anyone holding the plan can compute digests of guessed names (a dictionary attack on names
they can guess); nobody holding only the repository can, unless a snapshot holds the plan
itself (format.md 8.1, the caveat).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
from dataclasses import replace
from typing import Any, Iterable

import pyrage

from dr.model.artifacts import Artifact
from dr.model.recovery import normalize
from dr.repository import encryption

#: the stored identity of a secret artifact starts with it (docs/format.md 8.1)
PREFIX = "hmac-sha256:"
SEALED, SEALED_MAC, TOKEN, PROVIDES = "sealed", "sealed_mac", "change_token", "provides"
#: a sealed body's meta member listing the names an exporter sealed outside the line (8.1)
SEALED_NAMES = "sealed_names"
#: meta members a sealed line keeps in plaintext: they name nothing (8.1)
PLAIN = ("recipients", "sops", TOKEN)
_INFO = b"dr name key v1"


def name_key(recipients: list[str]) -> bytes:
    """HMAC-SHA256(key "dr name key v1", the sorted distinct recipients joined by newlines)."""
    canonical = "\n".join(sorted({r.strip() for r in recipients}))
    return hmac.new(_INFO, canonical.encode(), hashlib.sha256).digest()


def plan_name_key(recipients: list[str]) -> bytes:
    """The name key of a plan's recipients; none without recipients (nothing is sealed then)."""
    return name_key(recipients) if recipients else b""


def keyed(key: bytes, text: str) -> str:
    return PREFIX + hmac.new(key, text.encode(), hashlib.sha256).hexdigest()


def provided(key: bytes, reference: str) -> str:
    """A secret artifact's stored meta['provides'] entry for `reference`: the audit, given the
    plan's recipients, finds the dependencies it satisfies without learning any other name."""
    return keyed(key, "provides\x00" + normalize(reference))


class ProvidedCopies(dict):
    """normalize(reference) -> copies. A secret artifact provides a reference under its keyed
    name (format.md 8.1): get() finds it there too, given the plan's name key (the audit, and a
    restore's planning without the identity, match a Pod's Secret with its sealed batch)."""

    def __init__(self, name_key: bytes = b"", copies: dict | None = None):
        super().__init__(copies or {})
        self.name_key = name_key

    def get(self, reference, default=None):
        found = super().get(reference)
        if found is None and self.name_key and isinstance(reference, str):
            found = super().get(provided(self.name_key, reference))
        return default if found is None else found


def is_sealed(artifact: Artifact) -> bool:
    return SEALED in artifact.meta


def shown(artifact: Artifact) -> str:
    """`source/identity` for messages, saying when the identity is a sealed name's digest."""
    sealed = " (a sealed name: docs/format.md 8.1)" if is_sealed(artifact) else ""
    return f"{artifact.source}/{artifact.identity}{sealed}"


class Sealer:
    """What a backup uses to write secret lines: digests with the name key, and encryption."""

    def __init__(self, recipients: list[str], parsed: list[pyrage.x25519.Recipient]):
        self._key = plan_name_key(recipients)
        self._recipients = parsed

    def identity(self, kind: str, identity: str) -> str:
        return keyed(self._key, f"{kind}\x00{identity}")

    def name(self, name: str) -> str:
        """A secret's name where a line must record it in plaintext (a dependency's reference, a
        finding): keyed, so equal names give equal digests and nothing else can be read (8.1)."""
        return keyed(self._key, f"name\x00{name}")

    def token(self, change_token: str) -> str:
        return keyed(self._key, change_token) if change_token else ""

    def seal(self, identity: str, meta: dict[str, Any], previous: Artifact | None) -> dict[str, Any]:
        """The plaintext meta of a secret line; the parent's ciphertext when nothing in it changed
        (a catalog of an unchanged source then differs from its parent's only in what is new)."""
        hidden = {k: v for k, v in meta.items() if k not in PLAIN and k not in (SEALED, SEALED_MAC)}
        body = json.dumps({"identity": identity, "meta": hidden}, sort_keys=True, separators=(",", ":"))
        mac = keyed(self._key, body)
        if previous is not None and previous.meta.get(SEALED_MAC) == mac and SEALED in previous.meta:
            sealed = previous.meta[SEALED]
        else:
            sealed = base64.b64encode(encryption.encrypt(body.encode(), self._recipients)).decode()
        plain = {k: v for k, v in meta.items() if k in PLAIN}
        if type(meta.get(PROVIDES)) is list:  # what the audit matches dependencies with, keyed
            plain[PROVIDES] = [provided(self._key, ref) for ref in meta[PROVIDES] if type(ref) is str]
        return {**plain, SEALED: sealed, SEALED_MAC: mac}


def unseal(artifact: Artifact, identities: list[pyrage.x25519.Identity]) -> Artifact:
    """The artifact with its real identity and meta (EncryptionError without a key that opens it)."""
    sealed = artifact.meta.get(SEALED)
    if sealed is None:
        return artifact
    body = open_body(sealed, identities, f"{artifact.source}/{artifact.identity}")
    plain = {k: v for k, v in artifact.meta.items() if k not in (SEALED, SEALED_MAC)}
    return replace(artifact, identity=body["identity"], meta={**plain, **body["meta"]})


def open_body(sealed: Any, identities: list[pyrage.x25519.Identity], where: str) -> dict[str, Any]:
    """A sealed line's body {identity, meta} (EncryptionError when no key opens it, or damaged)."""
    try:
        ciphertext = base64.b64decode(sealed, validate=True)
    except (TypeError, binascii.Error):
        raise encryption.EncryptionError(f"{where}: meta 'sealed' is not base64: the catalog is damaged or "
                                         "hostile") from None
    return _body(encryption.decrypt(ciphertext, identities), where)


def _body(data: bytes, where: str) -> dict[str, Any]:
    try:
        body = json.loads(data)
    except ValueError:
        body = None
    if (type(body) is not dict or type(body.get("identity")) is not str or "\x00" in body["identity"]
            or type(body.get("meta")) is not dict):
        raise encryption.EncryptionError(f"{where}: its sealed name is not {{identity, meta}}: the catalog is "
                                         "damaged or hostile")
    return body


def open_all(artifacts: Iterable[Artifact], identities: list[pyrage.x25519.Identity]) -> list[Artifact]:
    """Every artifact, unsealed where one of the identities opens it, else as stored."""
    out = []
    for artifact in artifacts:
        try:
            out.append(unseal(artifact, identities) if identities else artifact)
        except encryption.EncryptionError:
            out.append(artifact)
    return out


def split_open(artifacts: Iterable[Artifact], identities: list[pyrage.x25519.Identity]
               ) -> tuple[list[Artifact], list[tuple[Artifact, str]]]:
    """(the artifacts unsealed, [(artifact, why) for those no identity opens]): a restore never
    writes under a digest's name, and restores the rest of the source."""
    opened, refused = [], []
    for artifact in artifacts:
        try:
            opened.append(unseal(artifact, identities))
        except encryption.EncryptionError as exc:
            refused.append((artifact, str(exc)))
    return opened, refused


def require_open(artifacts: Iterable[Artifact], identities: list[pyrage.x25519.Identity]) -> list[Artifact]:
    """The artifacts unsealed, or EncryptionError."""
    return [unseal(a, identities) for a in artifacts]


def seal_json(value: Any, recipients: list[pyrage.x25519.Recipient]) -> str:
    """A JSON value as base64 age ciphertext to the recipients: what a record stored beside the
    snapshots (a restore journal, a drill record) holds instead of names that may be secret."""
    body = json.dumps(value, sort_keys=True, separators=(",", ":")).encode()
    return base64.b64encode(encryption.encrypt(body, recipients)).decode()


def unseal_json(text: str, identities: list[pyrage.x25519.Identity]) -> Any:
    """seal_json's value back (EncryptionError without a key that opens it, or damaged text)."""
    try:
        return json.loads(encryption.decrypt(base64.b64decode(text, validate=True), identities))
    except (TypeError, ValueError, binascii.Error):
        raise encryption.EncryptionError("a sealed record field is not sealed JSON: damaged or hostile") from None
