"""A batch: the objects of one resource type in one namespace, becoming one artifact.

Objects are appended as JSON Lines to a spooled temporary file (in memory up to SPOOL_BYTES,
then on disk), so a batch of any size costs bounded memory. The change token is a digest of
every object's namespace/name@resourceVersion plus a fingerprint of everything else that
shapes the stored bytes (format version, include_status, which owners are kept): when no
object changed, the token equals the previous snapshot's and the sink reuses its content.
"""

from __future__ import annotations

import hashlib
import tempfile
from typing import BinaryIO

from dr.exporters.kubernetes.resources import ResourceType
from dr.model.artifacts import Dependency, Sensitivity

KIND = "kubernetes-objects"
# Objects listed only to record what they depend on (a default workload kind the plan leaves
# out): the content names them (kind, namespace, name, resourceVersion), nothing to restore.
SCANNED_KIND = "kubernetes-scanned"
FORMAT = 1  # the JSON Lines content of a kubernetes-objects artifact; bump when it changes
SPOOL_BYTES = 1 << 20


class Batch:
    def __init__(self, rtype: ResourceType, namespace: str | None, part: int, fingerprint: str,
                 scanned_only: bool = False):
        self.rtype, self.namespace, self.part = rtype, namespace, part
        self.scanned_only = scanned_only
        self._spool = tempfile.SpooledTemporaryFile(max_size=SPOOL_BYTES)
        # names-only content must never be reused for a full batch of the same identity
        self._hash = hashlib.sha256(fingerprint.encode() + (b" scanned" if scanned_only else b""))
        self.count = 0
        self.dependencies: dict[Dependency, None] = {}
        self.provides: list[str] = []
        self.members: dict[str, str] = {}  # <type>/<namespace>/<name> -> resourceVersion (coverage)
        self.workload = False

    @property
    def kind(self) -> str:
        return SCANNED_KIND if self.scanned_only else KIND

    @property
    def secret(self) -> bool:
        return self.rtype.key == ("", "secrets")

    def add(self, line: bytes, version_key: str, dependencies: list[Dependency], provides: list[str],
            workload: bool, member: tuple[str, str] = ("", "")) -> None:
        self._spool.write(line + b"\n")
        self._hash.update(version_key.encode() + b"\n")
        self.members[f"{self.rtype.identity(self.namespace)}/{member[0]}"] = member[1]
        self.count += 1
        self.dependencies.update(dict.fromkeys(dependencies))
        self.provides += provides
        self.workload |= workload

    @property
    def identity(self) -> str:
        base = self.rtype.identity(self.namespace)
        return base if self.part == 1 else f"{base}#{self.part}"

    @property
    def change_token(self) -> str:
        return f"rv-{FORMAT}:{self._hash.hexdigest()}"

    def sensitivity(self, override: Sensitivity | None) -> Sensitivity:
        """Secrets are always secret-class; the plan may raise the rest, never lower a Secret."""
        if self.secret:
            return Sensitivity.SECRET
        return override or Sensitivity.INTERNAL

    def meta(self, custom: bool) -> dict:
        if self.scanned_only:  # nothing here is restored, so it provides nothing
            return {**self.rtype.to_meta(), "format": FORMAT, "namespace": self.namespace or "",
                    "objects": self.count, "workload": self.workload, "exported": False}
        return {**self.rtype.to_meta(), "format": FORMAT, "namespace": self.namespace or "",
                "objects": self.count, "workload": self.workload, "custom": custom,
                "provides": self.provides, "members": self.members}

    def open(self) -> BinaryIO:
        """The JSON Lines content (called by the sink only when the token changed)."""
        self._spool.seek(0)
        return self._spool

    def close(self) -> None:
        self._spool.close()
