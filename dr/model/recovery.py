"""Judging what a recovery needs against a failure scenario: pure functions over the plan.

Where it sits: in the model, below everything, because two jobs ask the same question and
must get the same answer: the audit (dr.audit, "can we recover?") and the restore planner
(dr.restore, "may this step run?"). Backup, restore and audit may not import one another, so
the rules live here. A test runs both over the same inputs and compares every verdict.

The rules (written out in dr.audit's module docstring; these functions are that text):
  lost      a domain is lost when it, or any domain it is nested in, failed;
  ok        the reference is placed (plan.placer) in a domain that is not lost; or it is
            placed nowhere but COVERED: the snapshot brings it back itself;
  remapped  placed in a lost domain but COVERED: the restore rebuilds it from the copy;
  blocker   placed in a lost domain and not covered;
  unknown   placed nowhere and not covered.
COVERED: some artifact of the snapshot lists the reference in meta['provides'] (a string or
a list of strings), compared after normalize(); every blob of that artifact is still stored;
and the copies survive: the target holding the snapshot is not lost and neither are the
credentials that reach it (targets[].credentials_location). A dependency's own artifact may
provide it.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Callable, Iterable

from dr.model.artifacts import Artifact
from dr.model.domains import DomainTree
from dr.model.locations import Placement
from dr.model.plans import Plan, TargetSpec
from dr.model.redaction import redact

OK, REMAPPED, BLOCKED, UNKNOWN = "ok", "remapped", "blocker", "unknown"
VERDICTS = (OK, REMAPPED, BLOCKED, UNKNOWN)
# How bad a verdict is, for "the worst verdict of a step": a blocker outweighs everything.
SEVERITY = {OK: 0, REMAPPED: 1, UNKNOWN: 2, BLOCKED: 3}


class UnknownDomain(ValueError):
    """A named domain is not in the plan; the message names the nearest valid one."""

    def __init__(self, name: str, nearest: str | None, known: list[str]):
        self.name, self.nearest = name, nearest
        hint = f"did you mean '{nearest}'? " if nearest else ""
        super().__init__(f"no failure domain '{name}' in the plan; {hint}valid domains: {', '.join(known)}")


def lost_domains(tree: DomainTree, failed: Iterable[str]) -> frozenset[str]:
    """Every domain lost when all of `failed` fail at once (a region takes its clusters)."""
    failed = tuple(dict.fromkeys(failed))
    for name in failed:
        if name not in tree:
            known = sorted(d.name for d in tree)
            close = difflib.get_close_matches(name, known, n=1, cutoff=0.0)
            raise UnknownDomain(name, close[0] if close else None, known)
    return frozenset(d.name for d in tree if tree.is_lost(d.name, failed))


def is_lost(domain: str | None, lost: frozenset[str]) -> bool:
    return domain is not None and domain in lost


@lru_cache(maxsize=1 << 16)
def normalize(reference: str) -> str:
    """The form `provides` matching compares: redacted, trimmed, no trailing '/' or '.git'.

    Redacted because exporters record URLs redacted; case is kept (image tags and paths are
    case-sensitive).
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


def copies_survive(plan: Plan, target: TargetSpec, lost: frozenset[str]) -> bool:
    """Whether the snapshot's own copies count: its target and that target's credentials survive."""
    if is_lost(target.domain, lost):
        return False
    if target.credentials_location:
        return not is_lost(plan.placer.place(target.credentials_location).domain, lost)
    return True


@dataclass(frozen=True)
class Judgement:
    verdict: str
    placement: Placement
    copy: Copy | None = None
    note: str = ""  # why a copy in the snapshot did not count


class RecoveryJudge:
    """Verdicts for references in one scenario; placements and copy checks are cached."""

    def __init__(self, plan: Plan, lost: frozenset[str], copies: dict[str, list[Copy]],
                 copy_is_intact: Callable[[Copy], bool], copies_survive: bool):
        self.plan, self.lost, self.copies = plan, lost, copies
        self.copies_survive = copies_survive
        self._copy_is_intact = copy_is_intact
        self._placed: dict[str, Placement] = {}
        self._intact: dict[Copy, bool] = {}

    def place(self, reference: str) -> Placement:
        found = self._placed.get(reference)
        if found is None:
            found = self._placed[reference] = self.plan.placer.place(reference)
        return found

    def intact_copy(self, reference: str) -> tuple[Copy | None, str]:
        """The first copy whose blobs are all stored, or None and why not."""
        found = self.copies.get(normalize(reference), [])
        for copy in found:
            if copy not in self._intact:
                self._intact[copy] = self._copy_is_intact(copy)
            if self._intact[copy]:
                return copy, ""
        if found:
            return None, f"the copy in {found[0].artifact} is missing blobs (run dr verify --read-data)"
        return None, ""

    def judge(self, reference: str) -> Judgement:
        placement = self.place(reference)
        if placement.domain is not None and not is_lost(placement.domain, self.lost):
            return Judgement(OK, placement)
        copy, note = self.intact_copy(reference)
        if placement.domain is None:
            # Placed nowhere but brought back by the snapshot itself: nothing outside is needed.
            return Judgement(OK if copy else UNKNOWN, placement, copy, note)
        if copy is not None and not self.copies_survive:
            copy, note = None, f"the copy in {copy.artifact} is lost with the snapshot's target"
        if copy is not None:
            return Judgement(REMAPPED, placement, copy)
        return Judgement(BLOCKED, placement, None, note)


def worst(verdicts: Iterable[str]) -> str:
    """The most severe verdict (ok when there is none)."""
    return max(verdicts, key=SEVERITY.__getitem__, default=OK)
