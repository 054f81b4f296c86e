"""The required part of the exporter contract (v2): the Exporter class and what its three
methods are handed and return. Everything else an exporter may tell dr is an optional
capability (dr.contract.capabilities), detected by the registry.

Where it sits: the contract layer (dr.contract), under the core and over the repository and
model; every exporter and the core import it, and it imports no exporter.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from datetime import timedelta
from enum import Enum
from typing import Any, BinaryIO, Callable, ClassVar, Iterable, Iterator, Protocol, Union

from pydantic import BaseModel, ConfigDict

from dr.model.artifacts import Artifact, Dependency, Sensitivity

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

    def unchanged(self, kind: str, identity: str, change_token: str, *,
                  sensitivity: Sensitivity = Sensitivity.INTERNAL) -> bool:
        """Whether write() with this change_token would reuse the previous snapshot's content
        without calling `content`: an exporter that fetches many contents in one request (the
        volumes mover's stream) asks first and fetches only the others."""
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
    # A version token (a Kubernetes resourceVersion). Items with one are compared one by one
    # with the members the snapshot's artifacts record (meta["members"]): new, changed, deleted.
    version: str = ""


@dataclass(frozen=True)
class PlanDependency:
    """A dependency that artifacts of other sources of the plan recorded (what an image or
    chart copier copies)."""

    kind: str
    reference: str
    sources: tuple[str, ...]  # the sources whose artifacts need it
    # the distinct `detail` texts those artifacts recorded with it (what needs it, for findings:
    # "helm release team-a/web v3"), in the order first seen, at most DETAILS_KEPT
    details: tuple[str, ...] = ()


DETAILS_KEPT = 20  # per PlanDependency: enough to name who needs it, bounded for a shared reference


@dataclass
class ExportContext:
    """What an exporter instance knows about its plan source."""

    source: str
    options: Any  # the exporter's validated Options instance
    base_dir: str  # the plan's folder: relative paths in options resolve against it
    sensitivity: Sensitivity | None = None  # the plan's override for this source, if any
    log: Callable[[str], None] = lambda message: None
    findings: list[dict] = field(default_factory=list)
    #: for an exporter that reads_plan_dependencies: the other sources' dependencies
    plan_dependencies: Callable[[], list[PlanDependency]] = lambda: []
    # Host globs the plan places (Placer.host_patterns): a bare host name an exporter finds in
    # the content it captures is worth recording as a dependency when one of these matches it.
    hosts: tuple[str, ...] = ()
    # The source's `rto:` (None when the plan sets none), set by `dr backup`: what a certificate
    # must outlive (it expires within the RTO: a recovery would start with it about to expire).
    rto: timedelta | None = None
    # What a secret's name becomes where the exporter must record it outside a sealed line (a
    # dependency's reference, a finding): `dr backup` gives the plan's keyed digest (format.md
    # 8.1, names.Sealer.name); other callers store nothing and keep the name.
    seal_name: Callable[[str], str] = lambda name: name

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
    # a `failed` item refused because what the catalog says of it is damaged or hostile (a field
    # the exporter cannot act on): the restore is then damage, exit 6, as a damaged blob is
    damaged: bool = False

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
    """Base class of every exporter: what every one of them must say and do.

    Optional capabilities (planning, audit declarations, outside copies, checkpoint saves, deploy
    needs, RTO estimates, drill comparison) are mixins of dr.contract.capabilities: an exporter
    inherits the ones it implements (or only defines their members), and the registry adds the
    defaults of the others when it loads the class, so the core asks every exporter alike.
    """

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
