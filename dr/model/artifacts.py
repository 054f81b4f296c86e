"""Artifacts and their dependencies.

An artifact is one unit an exporter captured (a git repository bundle, a file, a set of
Kubernetes objects). It records what restoring it depends on: those dependencies are what the
restore planner judges against the failure domains.
"""

from __future__ import annotations

import re
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
        """The artifact a catalog line describes, every member checked first (DamagedEntry)."""
        check_entry(data)
        return cls(
            source=data["source"],
            exporter=data["exporter"],
            kind=data["kind"],
            identity=data["identity"],
            size=data["size"],
            sensitivity=Sensitivity(data["sensitivity"]),
            chunks=list(data.get("chunks", [])),
            digest=data.get("digest", ""),
            encrypted=data.get("encrypted", False),
            dependencies=[Dependency.from_json(d) for d in data.get("dependencies", [])],
            meta=dict(data.get("meta", {})),
        )

    @staticmethod
    def check_json(data: dict[str, Any]) -> dict[str, Any]:
        """data itself, once it passed the checks from_json makes (the same DamagedEntry).

        For readers that use the parsed catalog line as it is, without building the objects
        (dr.repository.catalogs.read_catalog_records).
        """
        check_entry(data)
        return data


class DamagedEntry(ValueError):
    """A catalog line that is not what docs/format.md section 8 says a writer writes: a member
    missing, of the wrong type or out of range. Every reader of the line would act on it (a
    restore writes where `identity` says, reads the chunks it lists), so it is refused whole."""

    def __init__(self, data: Any, member: str, problem: str):
        where = "catalog entry"
        if isinstance(data, dict) and isinstance(data.get("source"), str) and isinstance(data.get("identity"), str):
            where += f" {data['source']}/{data['identity']}"[:200].replace("\x00", "\\0")
        super().__init__(f"{where}: field {member!r} {problem}: the catalog is damaged or hostile")


def check_entry(data: Any) -> None:
    """Raise DamagedEntry unless `data` is a catalog line of the form section 8 gives. On every
    line of every catalog the audit reads (a million in a large one): plain type tests, no regex."""
    if type(data) is not dict:
        raise DamagedEntry(data, "(line)", f"is a JSON {type(data).__name__}, not an object")
    for name in _NAMES:
        value = data.get(name)
        if type(value) is not str or (not value and name != "identity") or "\x00" in value:
            raise DamagedEntry(data, name, _missing_or("a non-empty string without NUL", data, name))
    size = data.get("size")
    if type(size) is not int or size < 0:
        raise DamagedEntry(data, "size", _missing_or("a byte count (an integer >= 0)", data, "size"))
    if data.get("sensitivity") not in _SENSITIVITIES:
        raise DamagedEntry(data, "sensitivity", _missing_or(f"one of {', '.join(_SENSITIVITIES)}", data,
                                                            "sensitivity"))
    _check_content(data)
    _check_facts(data)


def _check_content(data: dict[str, Any]) -> None:
    chunks = data.get("chunks", ())
    if type(chunks) is not list:
        raise DamagedEntry(data, "chunks", "is not a list of sha256 digests")
    for chunk in chunks:
        if type(chunk) is not str or not _DIGEST(chunk):
            raise DamagedEntry(data, "chunks", "is not a list of sha256 digests")
    digest = data.get("digest", "")
    if digest != "" and (type(digest) is not str or not _DIGEST(digest)):
        raise DamagedEntry(data, "digest", "is not a sha256 digest")
    encrypted = data.get("encrypted", False)
    if encrypted is not (data["sensitivity"] == _SECRET):  # format.md: exactly the secret ones
        raise DamagedEntry(data, "encrypted", f"is {_shown(encrypted)} for a {data['sensitivity']} artifact")
    if encrypted and digest:  # a plaintext digest of secret content lets anyone test guesses: never written
        raise DamagedEntry(data, "digest", "is present in an encrypted artifact")


def _check_facts(data: dict[str, Any]) -> None:
    if type(data.get("meta", _EMPTY)) is not dict:
        raise DamagedEntry(data, "meta", "is not an object")
    dependencies = data.get("dependencies", ())
    if type(dependencies) is not list:
        raise DamagedEntry(data, "dependencies", "is not a list")
    for dep in dependencies:
        if (type(dep) is not dict or type(dep.get("kind")) is not str or type(dep.get("reference")) is not str
                or type(dep.get("detail", "")) is not str):
            raise DamagedEntry(data, "dependencies", "holds an entry that is not {kind, reference[, detail]} strings")


def _missing_or(expected: str, data: dict[str, Any], name: str) -> str:
    if name not in data:
        return "is missing"
    return f"is {_shown(data[name])}, not {expected}"


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else f"{text[:57]}..."


_NAMES = ("source", "exporter", "kind", "identity")
_DIGEST = re.compile(r"[0-9a-f]{64}").fullmatch
_EMPTY: dict[str, Any] = {}
# A tuple, not a set: a hostile line's unhashable value (a list) compares unequal instead of raising.
_SENSITIVITIES = tuple(s.value for s in Sensitivity)
_SECRET = Sensitivity.SECRET.value
