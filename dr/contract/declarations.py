"""The declarations of the exporter contract (v2): the data an exporter's optional capabilities
answer with (remap kinds, ordering, finding codes, destinations, any-of needs, restore options,
RPO rows, copy reports, checkpoint saves, restored content).

Where it sits: the contract layer (dr.contract); plain data, imported by the capabilities, the
exporters and the core.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Union

from dr.model.artifacts import Artifact

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
    audit's rules, and so is each reference of `writes_to` (where the call writes that no
    dependency records: the region an unused certificate is imported back into).
    `writes_origin=False` says such a call writes to no place the plan judges."""

    artifacts: list[Artifact]
    to: str | None
    how: str  # where `to` comes from, for people
    label: str = ""  # names the call when a source restores to several destinations
    writes_origin: bool = True  # with `to` None: it writes where the artifacts came from
    # with `to` None: references (placed by the plan as dependencies are) of where it writes
    writes_to: tuple[str, ...] = ()


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
class SaveCopy:
    """One DR copy of a checkpoint save, for `dr drill --training` to choose from: `where` (its URL
    or path, placed by the plan like any reference: the drill takes the first copy whose place
    survives the drilled scenario), `remap` (the RestoreRequest.remap that restores exactly this
    copy), `label` (for people: "tier hot")."""

    where: str
    remap: Mapping[str, str]
    label: str = ""


@dataclass(frozen=True)
class CheckpointSave:
    """One checkpoint save of a training run, as the exporter measured it at its source (times in
    seconds since the epoch). `dr advise checkpoints` computes intervals from these; `dr drill
    --training` restores one of its `copies` and resumes the run from `<to>/<restored_path>`."""

    run: str
    step: int
    started: float  # when the save's first file was written
    finished: float  # when its last file (the index, the marker) was written
    previous_step: int | None = None  # the run's save before this one, when the source still held it
    previous_finished: float | None = None
    where: str = ""  # the checkpoint's URL or path, for people
    resume: str = ""  # whether a run can continue from it ("resumable", "serves, cannot resume: ..."), if judged
    copies: tuple[SaveCopy, ...] = ()  # its DR copies, in the order restore() prefers them
    restored_path: str = ""  # where restore(to=FOLDER) writes it, relative to FOLDER ("": not to a folder)

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
