"""The snapshot's own copies of referenced things: what meta['provides'] lists, and matching.

An exporter records, in an artifact's meta['provides'] (a string or a list of strings), the
references that artifact can bring back (a git bundle provides its remote's URL). A reference
and a provided one match after normalize().
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Iterable

from dr.model.artifacts import Artifact
from dr.model.redaction import redact


@lru_cache(maxsize=1 << 16)
def normalize(reference: str) -> str:
    """The form `provides` matching compares: redacted, trimmed, no trailing '/' or '.git'.

    Redacted because exporters record URLs redacted (no user:password@): a provider and a
    dependency must match whichever of the two forms each recorded. Case is kept (image tags
    and paths are case-sensitive).
    """
    ref = redact(reference).strip().rstrip("/")
    return ref[:-4] if ref.endswith(".git") else ref


def artifact_name(artifact: Artifact) -> str:
    return f"{artifact.source}/{artifact.kind}/{artifact.identity}"


@dataclass(frozen=True)
class Copy:
    """An artifact of the snapshot that holds a copy of a referenced thing."""

    artifact: str  # source/kind/identity
    source: str
    chunks: tuple[str, ...]


def provided_by(artifact: Artifact) -> list[str]:
    """The references an artifact's meta['provides'] lists; malformed meta provides nothing."""
    return provided_in(artifact.meta)


def provided_in(meta: dict[str, Any] | None) -> list[str]:
    """The references meta['provides'] lists, from an artifact or a raw catalog line."""
    provided = meta.get("provides") if meta else None
    refs = [provided] if isinstance(provided, str) else provided
    if not isinstance(refs, (list, tuple)):
        return []
    return [ref for ref in refs if isinstance(ref, str) and ref.strip()]


def copies_of(artifacts: Iterable[Artifact]) -> dict[str, list[Copy]]:
    """normalize(reference) -> the artifacts that provide it, in catalog order."""
    copies: dict[str, list[Copy]] = {}
    for artifact in artifacts:
        refs = provided_by(artifact)
        if not refs:
            continue
        copy = Copy(artifact_name(artifact), artifact.source, tuple(artifact.chunks))
        for ref in refs:
            found = copies.setdefault(normalize(ref), [])
            if copy not in found:
                found.append(copy)
    return copies
