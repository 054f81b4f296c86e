"""Artifacts and their dependencies.

An artifact is one unit an exporter captured (a git repository bundle, a file, a set of
Kubernetes objects). It records what restoring it depends on: those dependencies are what the
restore planner judges against the failure domains.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any


class Sensitivity(str, Enum):
    """How an artifact's content must be stored.

    SECRET content is encrypted to the plan's recipients before it leaves the process.
    """

    PUBLIC = "public"
    INTERNAL = "internal"
    SECRET = "secret"


@dataclass(frozen=True)
class Dependency:
    """Something restoring an artifact needs from the world outside the repository.

    kind:      what sort of thing (git-remote, image, registry, bucket, secret-store, dns, ...)
    reference: the reference as the artifact holds it (a URL, an image name, a host)
    detail:    where in the artifact the reference was found (an object, a field path)
    """

    kind: str
    reference: str
    detail: str = ""

    def to_json(self) -> dict[str, str]:
        data = {"kind": self.kind, "reference": self.reference}
        if self.detail:
            data["detail"] = self.detail
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "Dependency":
        return cls(kind=data["kind"], reference=data["reference"], detail=data.get("detail", ""))


@dataclass
class Artifact:
    """One captured unit, as recorded in a snapshot's catalog (docs/format.md, "Catalog").

    chunks:    digests of the blobs that hold the content, in order
    digest:    sha256 of the whole plaintext content (omitted for secret artifacts, where a
               plaintext digest would let anyone holding the repository test guesses)
    meta:      exporter-specific facts needed to restore (mode, mtime, refs ...)
    """

    source: str
    exporter: str
    kind: str
    identity: str
    size: int
    sensitivity: Sensitivity
    chunks: list[str] = field(default_factory=list)
    digest: str = ""
    encrypted: bool = False
    dependencies: list[Dependency] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "source": self.source,
            "exporter": self.exporter,
            "kind": self.kind,
            "identity": self.identity,
            "size": self.size,
            "sensitivity": self.sensitivity.value,
            "chunks": list(self.chunks),
            "encrypted": self.encrypted,
            "dependencies": [d.to_json() for d in self.dependencies],
            "meta": self.meta,
        }
        if self.digest:
            data["digest"] = self.digest
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "Artifact":
        return cls(
            source=data["source"],
            exporter=data["exporter"],
            kind=data["kind"],
            identity=data["identity"],
            size=int(data["size"]),
            sensitivity=Sensitivity(data["sensitivity"]),
            chunks=list(data.get("chunks", [])),
            digest=data.get("digest", ""),
            encrypted=bool(data.get("encrypted", False)),
            dependencies=[Dependency.from_json(d) for d in data.get("dependencies", [])],
            meta=dict(data.get("meta", {})),
        )

    @staticmethod
    def check_json(data: dict[str, Any]) -> dict[str, Any]:
        """data itself, once it passed the checks from_json makes (same KeyError, ValueError).

        For readers that use the parsed catalog line as it is, without building the objects
        (dr.repository.catalogs.read_catalog_records).
        """
        for name in ("source", "exporter", "kind", "identity"):
            data[name]  # a missing member raises KeyError, as in from_json
        int(data["size"])
        if data["sensitivity"] not in _SENSITIVITIES:  # the Enum call costs more than the test
            Sensitivity(data["sensitivity"])
        for dep in data.get("dependencies", []):
            dep["kind"], dep["reference"]
        return data


# A tuple, not a set: an unhashable value must reach Sensitivity() and raise its ValueError.
_SENSITIVITIES = tuple(s.value for s in Sensitivity)
