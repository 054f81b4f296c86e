"""Judging each distinct dependency of one snapshot in every scenario, and its findings.

The verdicts are the verdict engine's (dr.model.recovery: the rules, cached placements,
intact copies); the audit adds what it reports: one verdict per DependencyUse of the index
(dr.audit.gathering), and the findings and messages for blockers, remaps and unknowns. The
rules are written out in dr.audit's module docstring. Any-of needs (dr.audit.alternatives)
are judged here too, one Judged each, met when any of their references survives.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Mapping

from dr.audit.alternatives import AnyNeed, judge_needs
from dr.audit.declared import declared
from dr.audit.findings import BLOCKER, INFO, WARNING, Finding, redacted
from dr.audit.gathering import DependencyIndex, DependencyUse
from dr.audit.plan_remaps import PlanRemaps
from dr.model.locations import Placement
from dr.model.plans import Plan
from dr.model.recovery import (BLOCKED, FACT_KINDS, OK, REMAPPED, UNKNOWN, VERDICTS, AnyJudgement, Copy, Evidence,
                               Judgement, Placements, RecoveryJudge, Scenario, Verdict, service_facts)



@dataclass(slots=True)
class Judged:
    """One DependencyUse's verdict in one scenario."""

    use: DependencyUse
    judgement: Judgement
    any_of: AnyJudgement | None = None  # for an any-of need: every reference's judgement
    remap: str = ""  # the plan remap every source's restore applies to it, and where it then points

    @property
    def verdict(self) -> Verdict:
        return self.judgement.verdict

    @property
    def placement(self) -> Placement:
        return self.judgement.placement

    @property
    def provider(self) -> Copy | None:
        return self.judgement.copy

    @property
    def note(self) -> str:  # why a copy in the snapshot did not count
        return self.judgement.note


class DependencyJudge:
    """Verdicts for every distinct dependency of one snapshot, scenario by scenario.

    checked: source -> the dependency kinds its exporter checks at backup time (contract v2
    `checked_kinds`: the kubernetes exporter's classes). Objects the recovery cluster must have,
    not places: one that nothing places and the snapshot does not restore is what the backup's
    own finding reports (`class-missing`, naming the referrer, the field and the fixes), not an
    unknown location."""

    def __init__(self, plan: Plan, index: DependencyIndex, placements: Placements,
                 copy_is_intact: Callable[[Copy], bool], strict: bool = False,
                 any_needs: list[AnyNeed] | None = None, checked: Mapping[str, frozenset[str]] | None = None,
                 code_for: Callable[[str], str] | None = None, remaps: PlanRemaps | None = None):
        """code_for: a lost dependency kind's finding code (dr.audit.declared: what the installed
        exporters declare); default: every installed exporter's declarations. remaps: the plan's
        remaps as each source's restore applies them (dr.audit.plan_remaps); None: none."""
        self.remaps = remaps
        self.index = index
        self.code_for = code_for or declared().code_for
        self.checked = checked or {}
        self.any_needs = any_needs or []
        self.placements = placements
        self.strict = strict
        facts = service_facts((use.kind, use.reference, use.detail) for use in index.uses.values())
        self.evidence = Evidence(plan, index.provides, copy_is_intact, placements, facts)

    def judge(self, scenario: Scenario, copies_survive: bool) -> list[Judged]:
        judge = RecoveryJudge(self.evidence, scenario.lost, copies_survive, holder="the audited target",
                              lost_locations=scenario.lost_locations)
        judged = [Judged(use, judge.judge(use.reference)) for use in self.index.uses.values()
                  if use.kind not in FACT_KINDS]
        if self.remaps is not None:
            judged = [self._remapped(judge, item) for item in judged]
        judged = [item for item in judged if not (item.verdict == UNKNOWN and self._left_to_backup(item.use))]
        return judged + [_any_judged(need, found) for need, found in judge_needs(judge, self.any_needs)]

    def _remapped(self, judge: RecoveryJudge, item: Judged) -> Judged:
        """A dependency the plan's remaps move, judged at its new place (as the restore plan does)."""
        if self.remaps is None or item.verdict in (OK, REMAPPED):
            return item
        found = self.remaps.judge(judge, item.use)
        if found is None:
            return item
        return Judged(item.use, Judgement(found.verdict, item.placement, None, found.why), remap=found.why)

    def _left_to_backup(self, use: DependencyUse) -> bool:
        """Every source recording the dependency checks its kind at backup time (checked)."""
        return bool(use.sources) and all(use.kind in self.checked.get(source, ()) for source in use.sources)

    # -- findings ----------------------------------------------------------------------------
    def scenario_findings(self, scenario: Scenario, judged: list[Judged]) -> list[Finding]:
        findings = []
        for item in judged:
            if item.any_of is not None:
                findings += self._any_of_findings(item, scenario)
            elif item.verdict == BLOCKED:
                findings.append(self._finding(item, scenario, self.code_for(item.use.kind), BLOCKER,
                                              self._blocker_message(item, scenario)))
            elif item.verdict == REMAPPED:
                findings.append(self._finding(item, scenario, "dependency-remapped", INFO,
                                              self._remap_message(item, scenario)))
        return findings

    def unknown_findings(self) -> list[Finding]:
        """References nothing places (the same in every scenario), unless the snapshot holds a copy."""
        findings = []
        for use in self.index.uses.values():
            subject = self.evidence.judged_as(use.reference)  # a URL to a Service: the Service
            placement = self.placements.place(subject)
            if placement.domain is None and self.evidence.intact_copy(subject)[0] is None \
                    and use.kind not in FACT_KINDS and not self._left_to_backup(use):
                message = (f"nothing in the plan places {use.kind} '{redacted(use.reference)}' "
                           f"(host '{placement.host or '-'}'), so the audit cannot tell whether a "
                           f"restore of {_sources(use)} can still reach it{_recorded(use)}")
                findings.append(self._finding(Judged(use, Judgement(UNKNOWN, placement)), None, "unknown-location",
                                              BLOCKER if self.strict else WARNING, message))
        for need in self.any_needs:
            placed = [self.placements.place(ref) for ref in need.references]
            if any(p.domain is not None for p in placed) or \
                    any(self.evidence.intact_copy(ref)[0] is not None for ref in need.references):
                continue
            use = need.use(need.references[0] if need.references else need.what)
            message = (f"nothing in the plan places any of the {len(need.references)} references that can "
                       f"meet {need.kind} need '{need.what}' ({', '.join(map(redacted, need.references))}), "
                       f"so the audit cannot tell whether a restore of {_sources(use)} can still reach one")
            findings.append(self._finding(Judged(use, Judgement(UNKNOWN, placed[0] if placed else
                                                                 self.placements.place(use.reference))),
                                          None, "unknown-location", BLOCKER if self.strict else WARNING, message))
        return findings

    def _any_of_findings(self, item: Judged, scenario: Scenario) -> list[Finding]:
        use, found = item.use, item.any_of
        if len(found.judged) == 1:  # one reference: reported as any single dependency is
            return self.scenario_findings(scenario, [Judged(use, item.judgement)])
        every = "; ".join(self._placed(ref, j) for ref, j in found.judged)
        if item.verdict == BLOCKED:
            message = (f"{use.kind} need '{use.detail}' of {_sources(use)} is met by any one of "
                       f"{len(found.judged)} references, but every one is lost when {scenario.label}: {every}; "
                       f"no surviving copy exists")
            return [self._finding(item, scenario, self.code_for(use.kind), BLOCKER, message)]
        if item.verdict == REMAPPED:
            message = (f"{use.kind} need '{use.detail}' of {_sources(use)}: every reference is lost when "
                       f"{scenario.label} ({every}), but the snapshot holds a verified copy of "
                       f"'{redacted(use.reference)}' in {item.provider.artifact if item.provider else '?'}: "
                       f"restore it to a new location and point {_sources(use)} at it")
            return [self._finding(item, scenario, "dependency-remapped", INFO, message)]
        return []

    def _placed(self, reference: str, j: Judgement) -> str:
        where = (f"in {self.placements.path(j.placement.domain)} (by {self.placements.how(j.placement)})"
                 if j.placement.domain else "placed nowhere")
        return f"'{redacted(reference)}' {where}"

    def _finding(self, item: Judged, scenario: Scenario | None, code: str, severity: str,
                 message: str) -> Finding:
        use, placement = item.use, item.placement
        return Finding(code=code, severity=severity, message=message,
                       scenario=scenario.name if scenario else None, kind=use.kind,
                       reference=use.reference, location=self.placements.how(placement),
                       domain=placement.domain, domain_path=self.placements.path(placement.domain),
                       artifact=use.examples[0] if use.examples else None,
                       artifacts_affected=use.count, examples=list(use.examples),
                       sources=sorted(use.sources))

    def _blocker_message(self, item: Judged, scenario: Scenario) -> str:
        use, placement = item.use, item.placement
        why = f"; {item.note}" if item.note else ""
        return (f"{use.kind} '{redacted(use.reference)}' is in {self.placements.path(placement.domain)} "
                f"(by {self.placements.how(placement)}), which is lost when {scenario.label}; "
                f"{use.count} reference(s) from {_sources(use)} need it and no surviving copy exists{why}"
                f"{_recorded(use)}")

    def _remap_message(self, item: Judged, scenario: Scenario) -> str:
        use, placement = item.use, item.placement
        where = f"is in {self.placements.path(placement.domain)}, lost when {scenario.label}"
        if item.remap:
            return f"{use.kind} '{redacted(use.reference)}' {where}, but {item.remap}"
        if item.note:  # a Service whose backends the restore recreates (dr.model.recovery.services)
            return (f"{use.kind} '{redacted(use.reference)}' {where}, but is {item.note}: nothing outside the "
                    f"snapshot is needed")
        return (f"{use.kind} '{redacted(use.reference)}' {where}, but the snapshot holds a verified copy "
                f"in {item.provider.artifact if item.provider else '?'}: restore it to a new location "
                f"and point {_sources(use)} at it")


def _any_judged(need: AnyNeed, found: AnyJudgement) -> Judged:
    """One Judged for an any-of need: its verdict, shown at the reference relied on (or, when
    none meets it, the first lost one) so counts, graphs and findings place it."""
    lost = found.with_verdict(BLOCKED)
    reference = found.chosen or (lost[0] if lost else (found.judged[0][0] if found.judged else need.what))
    j = next((j for ref, j in found.judged if ref == reference), None)
    judgement = (Judgement(found.verdict, j.placement, j.copy, j.note) if j is not None
                 else Judgement(found.verdict, Placement(reference, "", None)))  # it names no reference
    return Judged(need.use(reference), judgement, found)


def count_verdicts(judged: list[Judged]) -> dict[Verdict, int]:
    counts = dict.fromkeys(VERDICTS, 0)
    for item in judged:
        counts[item.verdict] += 1
    return counts


def _recorded(use: DependencyUse) -> str:
    """Where the dependency was first recorded, for people (an object and field; a claim, its
    workload and provisioner), when its exporter said."""
    return f"; first recorded at {use.detail}" if use.detail else ""


def _sources(use: DependencyUse) -> str:
    names = sorted(use.sources)
    shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
    return f"source{'s' * (len(names) != 1)} {shown}"
