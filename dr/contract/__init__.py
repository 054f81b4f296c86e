"""The exporter contract, version 2. Documented in docs/exporters.md; a test keeps them in step.

An exporter is a class registered under the `dr.exporters` entry-point group. dr builds one
instance per plan source and calls, depending on the command:
  discover()  what exists now (the audit's coverage check),
  export()    capture everything as artifacts, each with what restoring it depends on,
  restore()   put artifacts back, one outcome (with a reason) per item.
An exporter never touches the repository: it writes through an ArtifactSink and reads
through a ContentReader, both handed to it by dr.

Version 2 adds what the restore planner, the audit, drills and `dr status` need to know about
an exporter, declared as data on the class (remap kinds, origin and self-checked dependency kinds,
ordering roles and rules, CLI restore options) or answered by methods with safe defaults (default
destinations, scratch destinations for drills, any-of needs, RTO byte parts, RPO reports).
The core asks every exporter alike and names none: a built-in has no private path.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from enum import Enum
from datetime import timedelta
from types import MappingProxyType
from typing import Any, BinaryIO, Callable, ClassVar, Iterable, Iterator, Mapping, Protocol, Union

from pydantic import BaseModel, ConfigDict

# What a source needs in a pod (dr deploy render): its own module, part of the contract.
from dr.contract.pod_needs import AWS_CREDENTIALS, CREDENTIALS_DIR, ApiRead, ApiWrite, Credential, RunNeeds, Sizing
from dr.model.artifacts import Artifact, Dependency, Sensitivity
from dr.repository.encryption import EncryptionError
from dr.repository.repositories import IntegrityError

__all__ = ["CONTRACT_VERSION", "SUPPORTED_VERSIONS", "AnyOf", "ArtifactSink", "Content", "ContentReader",
           "Destination", "Discovered", "EncryptionError", "ExportContext", "Exporter", "ExporterOptions",
           "IntegrityError", "NoDestination", "Ordering", "OrderingRule", "Outcome", "OutcomeStatus", "PlanDependency",
           "RemapKind", "RestoreOption", "RestoreRequest", "Rewrite", "Rewriter", "RpoRow", "CopyReport",
           "DETAILS_KEPT", "prefix_rewrite", "ApiRead", "ApiWrite", "AWS_CREDENTIALS", "CREDENTIALS_DIR", "Credential", "RunNeeds",
           "CheckpointSave", "FindingCode", "RestoredContent", "Sizing"]

CONTRACT_VERSION = 2
# Versions dr still loads: the current one natively, older ones through an adapter
# (dr.contract.adapters). The deprecation policy is in docs/exporters.md.
SUPPORTED_VERSIONS = (1, 2)

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


# -- contract v2: what the core asks of every exporter alike -----------------------------------
def prefix_rewrite(reference: str, old: str, new: str) -> str | None:
    """`old` itself, or `old` followed by '/': the leading part is replaced (registries, buckets)."""
    base = old.rstrip("/")
    if reference == old or reference == base:
        return new
    if reference.startswith(base + "/"):
        return new.rstrip("/") + reference[len(base):]
    return None


@dataclass(frozen=True)
class RemapKind:
    """A kind of plan remap (`restore.remaps[].kind`) that this exporter applies when it restores."""

    name: str  # the plan's `kind:` value
    rewrites: frozenset[str]  # dependency kinds whose references it rewrites
    syntax: str  # what `old` and `new` look like, for people (docs, plan errors)
    request_prefix: str | None = None  # restore() hears it as RestoreRequest.remap[prefix + old] = new
    rewrite: Callable[[str, str, str], str | None] = prefix_rewrite  # (reference, old, new) -> new or None


@dataclass(frozen=True)
class Rewrite:
    """One plan remap applied to one reference."""

    kind: str
    old: str  # the reference as recorded
    new: str  # the reference after the remap
    remap_old: str  # the remap's `old` and `new`, as the plan wrote them
    remap_new: str
    reason: str = ""

    def describe(self) -> str:
        why = f" ({self.reason})" if self.reason else ""
        return f"plan remap {self.kind}: {self.old} -> {self.new}{why}"


# (dependency kind, reference) -> the first remap of the plan this source's restore applies, or None
Rewriter = Callable[[str, str], Union[Rewrite, None]]


@dataclass
class Destination:
    """Where one call of restore() writes: these artifacts, to `to` (None: the exporter decides).

    With `to` None the restore writes back where each artifact came from: the artifacts'
    dependencies of the exporter's origin_kinds are then judged as the destination, by the
    audit's rules. `writes_origin=False` says such a call writes to no place the plan judges."""

    artifacts: list[Artifact]
    to: str | None
    how: str  # where `to` comes from, for people
    label: str = ""  # names the call when a source restores to several destinations
    writes_origin: bool = True  # with `to` None: it writes where the artifacts came from


class NoDestination(Exception):
    """No default destination can be chosen; the message says which --to to give."""


@dataclass(frozen=True)
class AnyOf:
    """A need met when any one of `references` survives (one copy per DR tier, say)."""

    kind: str  # the dependency kind these references have
    what: str  # for people: "DR copy of run r1 step 200"
    references: tuple[str, ...]


@dataclass(frozen=True)
class OrderingRule:
    """Steps matching `before` are restored ahead of steps matching `after` (docs/restore.md)."""

    before: str  # a selector: role:<role>, type:<exporter>, kind:<artifact kind>, @workloads, @any ...
    after: str
    why: str
    requires: bool = False  # also hold `after` back when `before` did not succeed


@dataclass(frozen=True)
class Ordering:
    """An exporter's place in a whole-plan restore."""

    roles: frozenset[str] = frozenset()  # what its steps are, for `role:` selectors
    rules: tuple[OrderingRule, ...] = ()  # rules it brings, each with its reason


@dataclass(frozen=True)
class FindingCode:
    """An audit finding code an exporter brings (Exporter.finding_codes): the audit lists it with
    its title and action like its own codes. runbook: a path or URL for people; empty means
    runbooks/<code>.md in dr's tree, which only built-in exporters have."""

    code: str
    title: str
    action: str  # what to do, as one sentence a person can act on
    runbook: str = ""


@dataclass(frozen=True)
class RestoreOption:
    """A command-line option of `dr restore --source NAME` that this exporter declares."""

    flag: str  # "namespace-map" is given as --namespace-map
    metavar: str
    help: str
    key: str  # the RestoreRequest.remap key; with pairs, OLD=NEW becomes remap[key + OLD] = NEW
    pairs: bool = False  # the value is OLD=NEW and the option repeats
    switch: bool = False  # a flag without a value (metavar ""): given, it sets remap[key] = "true"


@dataclass
class RpoRow:
    """One line of `dr status` beyond the per-source snapshot age (a training run's DR copy)."""

    subject: str  # "run r1 tier hot"
    detail: str  # for people
    breach: bool
    data: dict[str, Any] = field(default_factory=dict)  # for --json

    def to_json(self) -> dict[str, Any]:
        return {"subject": self.subject, "detail": self.detail, "breach": self.breach, **self.data}


@dataclass
class CopyReport:
    """One copy an exporter keeps outside the repository (a checkpoint's DR copy, an image in a
    DR registry), checked as a restore would check it before reading it."""

    where: str  # the copy's URL or path, credentials removed
    what: str  # for people: "run llama step 200 tier hot"
    problems: list[str] = field(default_factory=list)  # each naming the file, blob or record
    data: dict[str, Any] = field(default_factory=dict)  # for --json

    @property
    def ok(self) -> bool:
        return not self.problems

    def to_json(self) -> dict[str, Any]:
        return {"where": self.where, "what": self.what, "ok": self.ok, "problems": self.problems, **self.data}


@dataclass(frozen=True)
class CheckpointSave:
    """One checkpoint save of a training run, as the exporter measured it at its source (times in
    seconds since the epoch). `dr advise checkpoints` computes intervals from these."""

    run: str
    step: int
    started: float  # when the save's first file was written
    finished: float  # when its last file (the index, the marker) was written
    previous_step: int | None = None  # the run's save before this one, when the source still held it
    previous_finished: float | None = None
    where: str = ""  # the checkpoint's URL or path, for people
    resume: str = ""  # whether a run can continue from it ("resumable", "serves, cannot resume: ..."), if judged

    @property
    def duration(self) -> float:
        return max(0.0, self.finished - self.started)

    @property
    def interval(self) -> float | None:
        """From the end of the previous save to the end of this one (None: no previous save)."""
        return None if self.previous_finished is None else self.finished - self.previous_finished


@dataclass(frozen=True)
class RestoredContent:
    """One restored item as `dr drill` compares it with the backup (Exporter.restored_content).
    Give `path` where the item is a file holding the artifact's bytes; else both fingerprints."""

    item: str  # the artifact's identity
    path: str = ""  # a file that holds the artifact's bytes: dr compares its sha256 with the catalog's
    restored: str = ""  # the exporter's fingerprint of what the destination holds ("": nothing there)
    backed_up: str = ""  # the same fingerprint of the backup's content: the two must be equal


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

    # -- contract v2: declared as data; the defaults fit an exporter that needs none of it ----
    #: plan remap kinds this exporter applies (restore.remaps[].kind)
    remap_kinds: ClassVar[tuple[RemapKind, ...]] = ()
    #: dependency kinds that record where an artifact came from: a restore writes there (or to
    #: its remap, or to --to) rather than reading from it, so they are judged as destinations
    origin_kinds: ClassVar[frozenset[str]] = frozenset()
    #: dependency kinds naming an object the destination must hold (a Kubernetes class), which
    #: export() checks itself and reports as its own finding when the backup lacks it: the
    #: audit does not also call one that nothing places an unknown location
    checked_kinds: ClassVar[frozenset[str]] = frozenset()
    #: audit finding codes this exporter brings (dr audit lists them like its own)
    finding_codes: ClassVar[tuple[FindingCode, ...]] = ()
    #: dependency kind -> the finding code of a blocker when what it names is lost (one of
    #: finding_codes, or a code of dr's own: docs/audit-json.md); kinds not listed get the
    #: generic dependency-in-failed-domain
    lost_kind_codes: ClassVar[Mapping[str, str]] = MappingProxyType({})
    #: roles and ordering rules in a whole-plan restore
    ordering: ClassVar[Ordering] = Ordering()
    #: options of `dr restore --source NAME` for this exporter's sources
    restore_options: ClassVar[tuple[RestoreOption, ...]] = ()
    #: export() reads the other sources' dependencies (context.plan_dependencies): the backup
    #: runs this source after the sources that do not
    reads_plan_dependencies: ClassVar[bool] = False
    #: what a backup of its sources takes in a pod, as measured (dr deploy render's resources);
    #: None: the repository writer's own figure
    sizing: ClassVar[Sizing | None] = None

    def request_remap(self, kind: str, old: str, new: str) -> dict[str, str]:
        """RestoreRequest.remap entries for one plan remap that applies to this source."""
        declared = next((k for k in self.remap_kinds if k.name == kind), None)
        if declared is None or declared.request_prefix is None:
            return {}
        return {f"{declared.request_prefix}{old}": new}

    def destinations(self, artifacts: list[Artifact], rewrite: Rewriter) -> list[Destination]:
        """Where restore() writes when the operator gave no --to; NoDestination says why none."""
        return [Destination(artifacts, None, "the exporter's own default")]

    def scratch_destination(self, folder: str) -> str | None:
        """A drill's destination inside a scratch folder; None when a folder cannot hold it."""
        return folder

    def restore_needs(self, artifacts: list[Artifact]) -> list[AnyOf]:
        """Needs met by any one of several references; their dependency kinds are judged only here."""
        return []

    def restore_bytes(self, artifacts: list[Artifact]) -> dict[str, int]:
        """Bytes a restore of these artifacts moves, by RTO part (image_warmup, data_warmup,
        checkpoint_download)."""
        return {"data_warmup": sum(a.size for a in artifacts)}

    def restore_wait(self, artifacts: list[Artifact]) -> tuple[float, str] | None:
        """Seconds after this restore before every client sees the restored state, and why (DNS:
        resolvers keep the old answers for up to the largest TTL); None when nothing waits."""
        return None

    def rpo_report(self, objective: timedelta | None, read_data: bool = False) -> list[RpoRow]:
        """Recovery points this exporter keeps outside the repository, judged against `objective`;
        each checked as a restore would check it (with read_data: every byte)."""
        return []

    def check_artifacts(self, artifacts: list[Artifact]) -> list[str]:
        """What restore() would refuse in what the catalog says of these artifacts (one snapshot's,
        of this source), without I/O: one problem a line, naming the artifact and the field
        (`dr verify` reports each as damage, exit 6). None by default."""
        return []

    def verify_copies(self, artifacts: list[Artifact], reader: ContentReader, read_data: bool) -> list[CopyReport]:
        """Check every copy outside the repository that these artifacts (one snapshot's, of this
        source) record, as restore() would before reading it; with read_data, every byte."""
        return []

    def restored_content(self, artifacts: list[Artifact], reader: ContentReader,
                         request: RestoreRequest) -> Iterator[RestoredContent]:
        """What the destination of restore(artifacts, reader, request) holds now, item by item,
        for `dr drill` to compare with the backup (I/O allowed: it runs after the restore).
        None by default: the drill then says the step's content was not compared."""
        return iter(())

    def run_needs(self) -> RunNeeds | None:
        """What this source needs to run unattended in a pod (dr deploy render); None: the
        exporter does not say, and the renderer names the source as not covered."""
        return None


    def plan_copy(self, artifact: Artifact, plan_path: str) -> tuple[str, str] | None:
        """Whether `artifact`, just written and not secret, holds the plan file at `plan_path` (a
        real path) in plaintext: (what, the object that holds it), for people, e.g. ("the plan's
        file", "conf/plan.yaml"); None when it does not. The backup then warns plan-in-snapshot:
        the repository would hold the key of sealed names (docs/format.md 8.1, the caveat). No
        I/O but reading local files."""
        return None

    def checkpoint_saves(self, artifacts: list[Artifact]) -> list[CheckpointSave]:
        """The training checkpoint saves these artifacts (one snapshot's, of this source) record,
        from what export() measured (no I/O); none for an exporter that keeps no checkpoints."""
        return []
