"""Sealed-secrets keys, proven at backup time: every SealedSecret in the backup opens with a
key in the same backup.

The sealed-secrets controller (bitnami-labs/sealed-secrets) keeps its RSA keys in Secrets
labelled `sealedsecrets.bitnami.com/sealed-secrets-key` (type kubernetes.io/tls: `tls.key`,
`tls.crt`) and renews them, by default every 30 days. A SealedSecret in Git opens only with
the key that sealed it, so a cluster rebuilt from a backup taken before a renewal cannot open
what was sealed after it. The backup sees the keys while it lists them (before they are
encrypted to the plan's recipients), so it can prove each SealedSecret opens: one item of its
`spec.encryptedData` is trial-decrypted, in memory, with each backed-up key; only the verdict
is kept (never the plaintext, which is discarded at once).

The sealing scheme, as the upstream project documents it (docs/developer/crypto.md and
pkg/crypto): a value is `len(rsa) || rsa || aes`, where `len` is the RSA ciphertext's length
as two big-endian bytes, `rsa` wraps a fresh 32-byte session key with RSA-OAEP (SHA-256, the
OAEP label below), and `aes` is the value under AES-256-GCM with that key and an all-zero
12-byte nonce (the key is used once). The label binds the value to where it may be unsealed:
`<namespace>/<name>` (strict, the default), `<namespace>` (annotation
`sealedsecrets.bitnami.com/namespace-wide: "true"`) or empty (`.../cluster-wide: "true"`).

A SealedSecret no backed-up key opens is a finding the audit reports as a blocker
(`sealed-secret-key-missing`, runbook "sealed-secrets key rotated after the last backup").
"""

from __future__ import annotations

import base64
import binascii
import threading
from dataclasses import dataclass
from typing import Iterator

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from dr.contract import FindingCode
from dr.exporters.kubernetes.resources import ResourceType

KEY_LABEL = "sealedsecrets.bitnami.com/sealed-secrets-key"
NAMESPACE_WIDE = "sealedsecrets.bitnami.com/namespace-wide"
CLUSTER_WIDE = "sealedsecrets.bitnami.com/cluster-wide"
SECRETS, SEALED = ("", "secrets"), ("bitnami.com", "sealedsecrets")
NONCE = bytes(12)  # the session key is used once: the scheme's nonce is all zeros
#: the audit's blocker for a SealedSecret no backed-up key opens (Exporter.finding_codes)
KEY_MISSING = FindingCode(
    "sealed-secret-key-missing", "A SealedSecret in the backup opens with none of the backed-up sealing keys",
    "Back up the sealed-secrets controller's current key Secrets (label "
    "sealedsecrets.bitnami.com/sealed-secrets-key) with the kubernetes source, or re-seal the secret "
    "with a backed-up key, then back up and audit again.")
AUDIT_CODE = KEY_MISSING.code


def label_for(namespace: str, name: str, annotations: dict) -> bytes:
    """The OAEP label a SealedSecret's values were sealed with (its scope)."""
    if str(annotations.get(CLUSTER_WIDE, "")).lower() == "true":
        return b""
    if str(annotations.get(NAMESPACE_WIDE, "")).lower() == "true":
        return namespace.encode()
    return f"{namespace}/{name}".encode()


def open_value(key: rsa.RSAPrivateKey, sealed: bytes, label: bytes) -> bytes | None:
    """The plaintext, or None when this key (or label) does not open the value."""
    if len(sealed) < 2:
        return None
    size = int.from_bytes(sealed[:2], "big")
    if len(sealed) < 2 + size:
        return None
    try:
        session = key.decrypt(sealed[2:2 + size], padding.OAEP(mgf=padding.MGF1(hashes.SHA256()),
                                                                algorithm=hashes.SHA256(), label=label or None))
        return AESGCM(session).decrypt(NONCE, sealed[2 + size:], None)
    except (ValueError, InvalidTag):
        return None


@dataclass(frozen=True)
class SealedItem:
    ref: str  # SealedSecret/<ns>/<name>
    item: str  # the encryptedData key tried
    value: bytes
    label: bytes


@dataclass(frozen=True)
class BackedUpKey:
    ref: str  # Secret/<ns>/<name>
    key: rsa.RSAPrivateKey
    created: str  # metadata.creationTimestamp


class SealedSecretsCheck:
    """Observes listed objects (from several threads); findings() once every list finished."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.keys: list[BackedUpKey] = []
        self.sealed: list[SealedItem] = []
        self.unreadable: list[str] = []  # key Secrets whose tls.key is not an RSA private key

    def observe(self, rtype: ResourceType, obj: dict) -> None:
        if rtype.key == SECRETS and KEY_LABEL in ((obj.get("metadata") or {}).get("labels") or {}):
            self._key(obj)
        elif rtype.key == SEALED:
            self._sealed(obj)

    def _key(self, obj: dict) -> None:
        meta = obj["metadata"]
        ref = f"Secret/{meta.get('namespace', '')}/{meta.get('name', '')}"
        try:
            pem = base64.b64decode((obj.get("data") or {}).get("tls.key", ""), validate=True)
            key = serialization.load_pem_private_key(pem, password=None)
        except (ValueError, TypeError, binascii.Error):
            key = None
        with self._lock:
            if isinstance(key, rsa.RSAPrivateKey):
                self.keys.append(BackedUpKey(ref, key, str(meta.get("creationTimestamp", ""))))
            else:
                self.unreadable.append(ref)

    def _sealed(self, obj: dict) -> None:
        meta = obj.get("metadata") or {}
        data = (obj.get("spec") or {}).get("encryptedData") or {}
        if not isinstance(data, dict) or not data:
            return
        item = sorted(data)[0]  # one item per SealedSecret: all of them are sealed with the same key
        try:
            value = base64.b64decode(str(data[item]), validate=True)
        except (ValueError, binascii.Error):
            value = b""
        namespace, name = str(meta.get("namespace", "")), str(meta.get("name", ""))
        sealed = SealedItem(f"SealedSecret/{namespace}/{name}", item, value,
                            label_for(namespace, name, meta.get("annotations") or {}))
        with self._lock:
            self.sealed.append(sealed)

    def opened_by(self, sealed: SealedItem) -> BackedUpKey | None:
        for backed_up in self.keys:
            plain = open_value(backed_up.key, sealed.value, sealed.label)
            if plain is not None:
                del plain  # only the verdict is kept
                return backed_up
        return None

    def findings(self) -> Iterator[dict]:
        for ref in sorted(self.unreadable):
            yield {"severity": "warning", "code": "sealed-secrets-key-unreadable", "object": ref,
                   "message": f"{ref} is labelled {KEY_LABEL} but its tls.key is not a PEM RSA private key: "
                              "it cannot open any SealedSecret",
                   "action": "check the Secret (the controller writes tls.key and tls.crt); remove the label "
                             "from a Secret that is not a sealing key"}
        for sealed in sorted(self.sealed, key=lambda s: s.ref):
            if self.opened_by(sealed) is None:
                yield self._unopened(sealed)

    def _unopened(self, sealed: SealedItem) -> dict:
        held = (f"none of the {len(self.keys)} sealed-secrets key(s) in this backup "
                f"({', '.join(k.ref for k in self.keys[:5])})" if self.keys else
                f"no Secret labelled {KEY_LABEL} is in this backup (is the controller's namespace exported? "
                "the kubernetes source excludes kube-system by default)")
        # a warning for the backup (it captured everything), a blocker for the audit: recovery of
        # this secret is impossible from this backup
        return {"severity": "warning", "code": "sealed-secret-unopenable", "audit_code": AUDIT_CODE,
                "blocks_recovery": True,
                "object": sealed.ref, "item": sealed.item,
                "message": f"{sealed.ref} (item {sealed.item!r}) cannot be opened by {held}: a cluster restored "
                           "from this backup cannot unseal it; the controller probably renewed its key after "
                           "the last key backup, or the SealedSecret was sealed for another cluster",
                "action": "back up the controller's current key Secrets (label "
                          f"{KEY_LABEL}) with this source, or re-seal the secret with a backed-up key "
                          "(kubeseal --re-encrypt), then back up again"}
