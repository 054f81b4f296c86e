"""The name of a key in a dependency of a secret artifact: chosen names sealed (format.md 8.1).

A KMS key alias or a Vault transit key name is chosen by people, often after what the key
protects (`alias/customer-x-payments`, sometimes a secret's own name when each secret has its
key), so in a secret artifact's dependencies it is a keyed digest like the secret's name. What
the audit places such a key by stays plaintext: its regional endpoint host (kms.<region>...) or
its Vault's address. Kept as they are: key ids (`key/<uuid>`, `mrk-...`, a bare uuid), which
are random and say nothing, and AWS-managed aliases (`alias/aws/<service>`), which name only
the service. The exporter lists what it sealed in the artifact's meta `sealed_names` (sealed
with the line), so that `dr audit --identity` can show the names again.
"""

from __future__ import annotations

from typing import Callable

from dr.repository.names import SEALED_NAMES

__all__ = ["SEALED_NAMES", "chosen_name", "is_chosen_alias", "kms_key"]


def is_chosen_alias(key: str) -> bool:
    """A KMS key named by a customer-chosen alias (bare or at the end of an alias ARN)."""
    alias = key.split(":", 5)[5] if key.startswith("arn:") and key.count(":") >= 5 else key
    return alias.startswith("alias/") and not alias.startswith("alias/aws/")


def kms_key(key: str, seal: Callable[[str], str], sealed: list[str] | None = None) -> str:
    """`key` for a dependency's reference: a chosen alias as its keyed digest (noted in `sealed`)."""
    if not is_chosen_alias(key):
        return key
    if sealed is not None and key not in sealed:
        sealed.append(key)
    return seal(key)


def chosen_name(name: str, seal: Callable[[str], str], sealed: list[str] | None = None) -> str:
    """A key name people chose (a transit key): its keyed digest, noted in `sealed`."""
    if sealed is not None and name not in sealed:
        sealed.append(name)
    return seal(name)
