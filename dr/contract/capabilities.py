"""The optional capabilities of the exporter contract (v2), each with its own version.

The required Exporter (dr.contract.exporter) discovers, exports and restores. Whatever else an
exporter can tell dr is one of the capabilities below: a mixin class holding the members and
their defaults (the defaults fit an exporter that needs none of it). An exporter inherits the
mixins it implements, or only defines their members; the registry detects which it implements
(`implemented`, listed by `dr plugins` and checked by the conformance suite) and completes the
class with the defaults of the rest (`complete`), so the core asks every exporter alike.

A capability changes version on its own: a new member with a default is the same version; a
member whose meaning changes makes a new version, which the registry adapts as it adapts older
contracts (dr.contract.adapters). docs/exporters.md documents each, with its version.

Where it sits: the contract layer (dr.contract); it imports no exporter.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from types import MappingProxyType
from typing import ClassVar, Iterator, Mapping

from dr.contract.declarations import (AnyOf, CheckpointSave, CopyReport, Destination, FindingCode, Ordering, RemapKind,
                                      RestoreOption, RestoredContent, Rewriter, RpoRow)
from dr.contract.exporter import ContentReader, Exporter, RestoreRequest
from dr.contract.pod_needs import RunNeeds, Sizing
from dr.model.artifacts import Artifact


class Planning:
    """Planning v1: where a whole-plan restore writes, in which order, with which remaps."""

    #: plan remap kinds this exporter applies (restore.remaps[].kind)
    remap_kinds: ClassVar[tuple[RemapKind, ...]] = ()
    #: dependency kinds that record where an artifact came from: a restore writes there (or to
    #: its remap, or to --to) rather than reading from it, so they are judged as destinations
    origin_kinds: ClassVar[frozenset[str]] = frozenset()
    #: dependency kinds naming an object the destination must hold (a Kubernetes class), which
    #: export() checks itself and reports as its own finding when the backup lacks it: the
    #: audit does not also call one that nothing places an unknown location
    checked_kinds: ClassVar[frozenset[str]] = frozenset()
    #: roles and ordering rules in a whole-plan restore
    ordering: ClassVar[Ordering] = Ordering()
    #: options of `dr restore --source NAME` for this exporter's sources
    restore_options: ClassVar[tuple[RestoreOption, ...]] = ()
    #: export() reads the other sources' dependencies (context.plan_dependencies): the backup
    #: runs this source after the sources that do not
    reads_plan_dependencies: ClassVar[bool] = False

    def request_remap(self, kind: str, old: str, new: str) -> dict[str, str]:
        """RestoreRequest.remap entries for one plan remap that applies to this source."""
        declared = next((k for k in self.remap_kinds if k.name == kind), None)
        if declared is None or declared.request_prefix is None:
            return {}
        return {f"{declared.request_prefix}{old}": new}

    def destinations(self, artifacts: list[Artifact], rewrite: Rewriter) -> list[Destination]:
        """Where restore() writes when the operator gave no --to; NoDestination says why none."""
        return [Destination(artifacts, None, "the exporter's own default")]

    def restore_needs(self, artifacts: list[Artifact]) -> list[AnyOf]:
        """Needs met by any one of several references; their dependency kinds are judged only here."""
        return []


class AuditDeclarations:
    """Audit declarations v1: the finding codes an exporter brings and what a lost dependency means."""

    #: audit finding codes this exporter brings (dr audit lists them like its own)
    finding_codes: ClassVar[tuple[FindingCode, ...]] = ()
    #: dependency kind -> the finding code of a blocker when what it names is lost (one of
    #: finding_codes, or a code of dr's own: docs/audit-json.md); kinds not listed get the
    #: generic dependency-in-failed-domain
    lost_kind_codes: ClassVar[Mapping[str, str]] = MappingProxyType({})

    def plan_copy(self, artifact: Artifact, plan_path: str) -> tuple[str, str] | None:
        """Whether `artifact`, just written and not secret, holds the plan file at `plan_path` (a
        real path) in plaintext: (what, the object that holds it), for people, e.g. ("the plan's
        file", "conf/plan.yaml"); None when it does not. The backup then warns plan-in-snapshot:
        the repository would hold the key of sealed names (docs/format.md 8.1, the caveat). No
        I/O but reading local files."""
        return None


class OutsideCopies:
    """Outside copies v1: copies kept outside the repository, and what restore would refuse."""

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


class CheckpointSaves:
    """Checkpoint saves v1: the training checkpoint saves an exporter measured (dr advise checkpoints)."""

    def checkpoint_saves(self, artifacts: list[Artifact]) -> list[CheckpointSave]:
        """The training checkpoint saves these artifacts (one snapshot's, of this source) record,
        from what export() measured (no I/O); none for an exporter that keeps no checkpoints."""
        return []


class DeployNeeds:
    """Deploy needs v1: what a source needs to run unattended in a pod (dr deploy render)."""

    #: what a backup of its sources takes in a pod, as measured (dr deploy render's resources);
    #: None: the repository writer's own figure
    sizing: ClassVar[Sizing | None] = None

    def run_needs(self) -> RunNeeds | None:
        """What this source needs to run unattended in a pod (dr deploy render); None: the
        exporter does not say, and the renderer names the source as not covered."""
        return None


class RtoEstimates:
    """RTO estimates v1: what a restore moves, by RTO part, and what waits after it."""

    def restore_bytes(self, artifacts: list[Artifact]) -> dict[str, int]:
        """Bytes a restore of these artifacts moves, by RTO part (image_warmup, data_warmup,
        checkpoint_download)."""
        return {"data_warmup": sum(a.size for a in artifacts)}

    def restore_wait(self, artifacts: list[Artifact]) -> tuple[float, str] | None:
        """Seconds after this restore before every client sees the restored state, and why (DNS:
        resolvers keep the old answers for up to the largest TTL); None when nothing waits."""
        return None


class DrillComparison:
    """Drill comparison v1: where a drill restores and what it compares with the backup."""

    def scratch_destination(self, folder: str) -> str | None:
        """A drill's destination inside a scratch folder; None when a folder cannot hold it."""
        return folder

    def restored_content(self, artifacts: list[Artifact], reader: ContentReader,
                         request: RestoreRequest) -> Iterator[RestoredContent]:
        """What the destination of restore(artifacts, reader, request) holds now, item by item,
        for `dr drill` to compare with the backup (I/O allowed: it runs after the restore).
        None by default: the drill then says the step's content was not compared."""
        return iter(())


@dataclass(frozen=True)
class Capability:
    """One optional capability: its name in `dr plugins`, its version, its mixin."""

    name: str
    version: int
    mixin: type

    @property
    def members(self) -> tuple[str, ...]:
        return tuple(name for name in vars(self.mixin) if not name.startswith("_"))


CAPABILITIES = (
    Capability("planning", 1, Planning),
    Capability("audit-declarations", 1, AuditDeclarations),
    Capability("outside-copies", 1, OutsideCopies),
    Capability("checkpoint-saves", 1, CheckpointSaves),
    Capability("deploy-needs", 1, DeployNeeds),
    Capability("rto-estimates", 1, RtoEstimates),
    Capability("drill-comparison", 1, DrillComparison),
)
_MIXINS = tuple(c.mixin for c in CAPABILITIES)


def overrides(cls: type, member: str) -> bool:
    """Whether `cls` (or a class it inherits from, other than the mixins) defines `member`
    itself rather than taking the capability's default."""
    for klass in cls.__mro__:
        if member in vars(klass):
            return klass not in _MIXINS
    return False


def implemented(cls: type) -> list[Capability]:
    """The capabilities `cls` implements: it inherits the mixin, or defines one of its members
    (of a class `complete` made: those of the class it completed)."""
    cls = vars(cls).get("completes", cls)
    return [c for c in CAPABILITIES
            if issubclass(cls, c.mixin) or any(overrides(cls, member) for member in c.members)]


def complete(cls: type[Exporter]) -> type[Exporter]:
    """`cls` with the defaults of every capability it lacks (itself when it lacks none): a
    subclass, so that the core can ask any exporter every capability's question."""
    missing = tuple(c.mixin for c in CAPABILITIES if not issubclass(cls, c.mixin))
    if not missing:
        return cls
    return type(cls.__name__, (cls, *missing), {"__module__": cls.__module__, "__doc__": cls.__doc__,
                                                "__qualname__": cls.__qualname__, "completes": cls})

