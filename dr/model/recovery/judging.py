"""Judging one reference in one scenario: ok, remapped, blocker or unknown.

Evidence is what holds in every scenario: where the plan places each reference (placement
does not depend on the scenario, so it is computed once per distinct reference) and which of
the snapshot's copies are intact (every blob still stored). A RecoveryJudge weighs that
evidence in one scenario. The audit makes one judge per scenario over one Evidence; a restore
plan makes one of each. The rules are in dr.model.recovery's docstring.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Mapping

from dr.model.locations import Placement
from dr.model.plans import Plan
from dr.model.recovery.copies import Copy, normalize
from dr.model.recovery.scenarios import placement_lost
from dr.model.recovery.services import behind, service_in_url
from dr.model.recovery.verdicts import BLOCKED, OK, REMAPPED, UNKNOWN, Verdict


class Placements:
    """plan.placer.place, cached by reference (a catalog repeats the same references a lot)."""

    def __init__(self, plan: Plan):
        self._placer = plan.placer
        self._tree = plan.domains
        self._cache: dict[str, Placement] = {}
        self._paths: dict[str, str] = {}

    def place(self, reference: str) -> Placement:
        found = self._cache.get(reference)
        if found is None:
            found = self._cache[reference] = self._placer.place(reference)
        return found

    def path(self, domain: str | None) -> str | None:
        """The domain's nesting for people (aws/prod/eu-west-1/train-eu1); None for no domain."""
        if not domain:
            return None
        found = self._paths.get(domain)
        if found is None:
            found = self._paths[domain] = self._tree.path(domain)
        return found

    @staticmethod
    def how(placement: Placement) -> str | None:
        """What placed it: "location NAME" or "rule NAME"; None when nothing did."""
        if placement.location:
            return f"location {placement.location}"
        if placement.rule:
            return f"rule {placement.rule}"
        return None


class Evidence:
    """What holds in every scenario: placements, and which of the snapshot's copies are intact.

    copies: normalize(reference) -> the copies that provide it (copies_of, or the audit's
    index); copy_is_intact: whether every blob of a copy is still stored, asked once per copy.
    """

    def __init__(self, plan: Plan, copies: Mapping[str, list[Copy]], copy_is_intact: Callable[[Copy], bool],
                 placements: Placements | None = None, services: Mapping[str, tuple[str, str]] | None = None):
        self.plan, self.copies = plan, copies
        self.services = services or {}  # what lies behind each backed-up Service (services.service_facts)
        self.placements = placements or Placements(plan)
        self._copy_is_intact = copy_is_intact
        self._intact: dict[Copy, bool] = {}
        self._subjects: dict[str, str] = {}  # judged_as, by reference: a catalog repeats them a lot

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

    def judged_as(self, reference: str) -> str:
        """The reference whose placement and copies decide: a URL to a Service is judged as the
        Service's name (services.service_in_url), unless the snapshot provides the URL itself or
        nothing but the URL is placed."""
        found = self._subjects.get(reference)
        if found is None:
            found = self._subjects[reference] = self._judged_as(reference)
        return found

    def _judged_as(self, reference: str) -> str:
        service = service_in_url(reference, self._known_service)
        if service is None or normalize(reference) in self.copies:
            return reference
        if self.placements.place(service).domain is None and not self._known_service(service) \
                and self.placements.place(reference).domain is not None:
            return reference
        return service

    def _known_service(self, name: str) -> bool:
        """Whether the snapshot holds the Service of that DNS name (a copy, or what lies behind it)."""
        return name in self.copies or name in self.services


@dataclass(frozen=True)
class Judgement:
    verdict: Verdict
    placement: Placement
    copy: Copy | None = None
    note: str = ""  # why a copy in the snapshot did not count


class RecoveryJudge:
    """Verdicts for references in one scenario.

    lost: the scenario's lost domains; copies_survive: whether the snapshot's own copies count
    (its target and the credentials that reach it survive: EssentialVerdicts.reachable);
    holder: what the note calls that target when its loss takes the copies with it;
    lost_locations: locations lost while their domains stay up (a registry-loss scenario).
    """

    def __init__(self, evidence: Evidence, lost: frozenset[str], copies_survive: bool,
                 holder: str = "the snapshot's target", lost_locations: frozenset[str] = frozenset()):
        self.evidence, self.lost, self.copies_survive, self.holder = evidence, lost, copies_survive, holder
        self.lost_locations = lost_locations
        self.plan, self.copies, self.placements = evidence.plan, evidence.copies, evidence.placements
        self._judged: dict[str, Judgement] = {}  # by reference: the verdict holds for the whole scenario

    def place(self, reference: str) -> Placement:
        return self.placements.place(reference)

    def loses(self, placement: Placement) -> bool:
        return placement_lost(placement, self.lost, self.lost_locations)

    def judge(self, reference: str) -> Judgement:
        found = self._judged.get(reference)
        if found is None:
            subject = self.evidence.judged_as(reference)
            found = self._judged[reference] = behind(self._judge(subject), subject, self.evidence.services)
        return found

    def _judge(self, reference: str) -> Judgement:
        placement = self.placements.place(reference)
        if placement.domain is not None and not self.loses(placement):
            return Judgement(OK, placement)
        copy, note = self.evidence.intact_copy(reference)
        if placement.domain is None:
            # Placed nowhere but brought back by the snapshot itself (a Secret, a ConfigMap, a
            # Service the same snapshot restores): nothing outside is needed.
            return Judgement(OK if copy else UNKNOWN, placement, copy, note)
        if copy is not None and not self.copies_survive:
            copy, note = None, f"the copy in {copy.artifact} is lost with {self.holder}"
        if copy is not None:
            return Judgement(REMAPPED, placement, copy)
        return Judgement(BLOCKED, placement, None, note)
