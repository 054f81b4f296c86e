"""The exporter contract, version 1. Documented in docs/exporters.md; a test keeps them in step.

An exporter is a class registered under the `dr.exporters` entry-point group. dr builds one
instance per plan source and calls, depending on the command:
  discover()  what exists now (the audit's coverage check),
  export()    capture everything as artifacts, each with what restoring it depends on,
  restore()   put artifacts back, one outcome (with a reason) per item.
An exporter never touches the repository: it writes through an ArtifactSink and reads
through a ContentReader, both handed to it by dr.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, BinaryIO, Callable, ClassVar, Iterable, Iterator, Protocol, Union

from pydantic import BaseModel, ConfigDict

from dr.model.artifacts import Artifact, Dependency, Sensitivity
from dr.repository.encryption import EncryptionError
from dr.repository.repositories import IntegrityError

__all__ = ["CONTRACT_VERSION", "ArtifactSink", "Content", "ContentReader", "Discovered", "EncryptionError",
           "ExportContext", "Exporter", "ExporterOptions", "IntegrityError", "Outcome", "OutcomeStatus",
           "RestoreRequest"]

CONTRACT_VERSION = 1

Content = Union[bytes, Callable[[], BinaryIO]]


class ExporterOptions(BaseModel):
    """Base of every exporter's options model: unknown keys are plan errors."""

    model_config = ConfigDict(extra="forbid")


class ArtifactSink(Protocol):
    """Where export() puts artifacts. Content is chunked, encrypted when secret, deduplicated."""

    source: str

    def write(self, kind: str, identity: str, content: Content, *,
              sensitivity: Sensitivity = Sensitivity.INTERNAL,
              dependencies: Iterable[Dependency] = (), meta: dict | None = None,
              change_token: str = "") -> Artifact:
        """Store one artifact and return its catalog record.

        content: bytes, or a callable that opens a binary stream (called only if needed).
        change_token: a cheap fingerprint of the content (size+mtime+inode, refs, a
        resourceVersion). When it equals the previous snapshot's token for the same kind and
        identity, the previous content is reused without calling `content`.
        """
        ...

    def transferred(self, nbytes: int) -> None:
        """Count bytes this source copied to DR storage outside the repository (a checkpoint's
        DR copy). They go into the snapshot's `bytes_transferred`, so restore planning's
        measured throughput includes them (the run's wall time does already)."""
        ...


class ContentReader(Protocol):
    """How restore() reads content: every blob verified, secret content decrypted."""

    def open(self, artifact: Artifact) -> BinaryIO:
        """A stream of the artifact's plaintext. Reading raises IntegrityError when a blob is
        missing or fails its digest (or the length or whole digest is wrong), EncryptionError
        when secret content cannot be decrypted (no matching identity)."""
        ...

    def read(self, artifact: Artifact) -> bytes:
        """The whole plaintext (for small artifacts); raises as open() does."""
        ...


@dataclass
class Discovered:
    """Something that exists at the source now (for coverage: exists but not backed up?)."""

    kind: str
    identity: str
    detail: str = ""


@dataclass
class ExportContext:
    """What an exporter instance knows about its plan source."""

    source: str
    options: Any  # the exporter's validated Options instance
    base_dir: str  # the plan's folder: relative paths in options resolve against it
    sensitivity: Sensitivity | None = None  # the plan's override for this source, if any
    log: Callable[[str], None] = lambda message: None
    findings: list[dict] = field(default_factory=list)

    def finding(self, severity: str, code: str, message: str, **facts: Any) -> None:
        """Record a problem noticed while exporting (kept in the snapshot manifest)."""
        self.findings.append({"severity": severity, "code": code, "message": message, **facts})


class OutcomeStatus(str, Enum):
    RESTORED = "restored"  # written to the destination and verified
    UNCHANGED = "unchanged"  # already present and identical: success, not an error
    PLANNED = "planned"  # --dry-run: would be restored
    SKIPPED = "skipped"  # deliberately not restored (the reason says why)
    CONFLICT = "conflict"  # present and different; replaced only with --overwrite
    FAILED = "failed"


@dataclass
class Outcome:
    item: str
    status: OutcomeStatus
    reason: str = ""

    @property
    def failed(self) -> bool:
        return self.status in (OutcomeStatus.FAILED, OutcomeStatus.CONFLICT)

    def to_json(self) -> dict:
        return {"item": self.item, "status": self.status.value, "reason": self.reason}


@dataclass
class RestoreRequest:
    """What the operator asked for. `to` is exporter-specific (a directory, a remote URL ...)."""

    to: str | None = None
    dry_run: bool = False
    overwrite: bool = False
    remap: dict[str, str] = field(default_factory=dict)


class Exporter(ABC):
    """Base class of every exporter. Subclasses set the class attributes and the methods."""

    #: the plan's `type:` value; must equal the entry-point name
    type_name: ClassVar[str]
    #: one line for `dr plugins`
    summary: ClassVar[str]
    #: the pydantic model of the source's options (subclass ExporterOptions)
    Options: ClassVar[type[ExporterOptions]]
    #: the contract version implemented; no default, so a class that does not say which
    #: version it implements is refused rather than taken to speak whatever dr runs
    contract_version: ClassVar[int]

    def __init__(self, context: ExportContext) -> None:
        self.context = context
        self.options = context.options

    @abstractmethod
    def discover(self) -> Iterator[Discovered]:
        """Yield what exists at the source now, without reading content."""

    @abstractmethod
    def export(self, sink: ArtifactSink) -> None:
        """Write every artifact, each with the dependencies restoring it needs, to `sink`."""

    @abstractmethod
    def restore(self, artifacts: list[Artifact], reader: ContentReader,
                request: RestoreRequest) -> Iterator[Outcome]:
        """Restore `artifacts`; yield one Outcome per item, each with a reason."""
