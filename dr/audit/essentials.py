"""The essentials' findings, in every audit.

What the essentials are, and their verdict in a scenario, is the verdict engine's
(dr.model.recovery.essentials): dr's repository targets, the credentials that reach each one,
the private key that decrypts secret content (when anything is encrypted or the plan has
recipients) and dr's own image. The audit asks on top: is at least one target outside the
failed domains, and does the audited one survive?

None of these can be rebuilt from the snapshot (the snapshot is behind them), so no remap
applies. A reference nothing places, or an essential the plan does not declare, is an
unknown-location finding that holds in every scenario.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from dr.audit.findings import BLOCKER, WARNING, Finding
from dr.model.recovery import (BLOCKED, CREDENTIALS, DR_IMAGE, KEY, TARGET, Essential, EssentialVerdicts,
                               Placements, Scenario, Verdict, judge_essentials)

@dataclass
class EssentialStates:
    """One scenario's view of the essentials, for findings and the picture."""

    judged: EssentialVerdicts
    copies_survive: bool = False  # the audited snapshot's target survives and can be reached
    findings: list[Finding] = field(default_factory=list)

    @property
    def verdicts(self) -> tuple[tuple[Essential, Verdict], ...]:
        return self.judged.verdicts

    @property
    def surviving_targets(self) -> list[str]:
        return self.judged.surviving_targets


_FIELDS = {CREDENTIALS: "targets[].credentials_location", KEY: "encryption.key_location",
           DR_IMAGE: "dr_image"}
_UNDECLARED = {
    CREDENTIALS: "target {owner} is a remote store but its credentials_location is not declared, so "
                 "the audit cannot tell whether the credentials survive",
    KEY: "secret content is encrypted but encryption.key_location is not declared: nobody can "
         "tell where the private key needed to decrypt it is kept",
    DR_IMAGE: "dr_image is not declared, so the audit cannot tell whether dr itself can be pulled "
              "after the failure",
}


def unknown_findings(items: list[Essential], placements: Placements, strict: bool) -> list[Finding]:
    findings = []
    for item in items:
        if item.role == TARGET or item.domain is not None:
            continue
        action = ""
        if not item.reference:
            message = _UNDECLARED[item.role].format(owner=item.owner)
            action = (f"Declare {_FIELDS[item.role]} in the plan (where it is kept) and place it with a "
                      "location or a placement rule, outside every protected domain.")
        else:
            message = (f"nothing in the plan places {item.name} '{item.reference}', so the audit "
                       f"cannot tell whether it survives")
        findings.append(Finding("unknown-location", BLOCKER if strict else WARNING, message,
                                kind=item.role, reference=item.reference, action=action))
    return findings


def judge_scenario(items: list[Essential], scenario: Scenario, audited: str,
                   placements: Placements) -> EssentialStates:
    judged = judge_essentials(items, scenario.lost, scenario.lost_locations)
    states = EssentialStates(judged, judged.reachable(audited))
    lost_targets = judged.lost_targets
    targets = [i for i in items if i.role == TARGET]
    finding = _FindingMaker(scenario, placements)
    if not states.surviving_targets:
        where = ", ".join(f"{t.name} in {placements.path(t.domain)}" for t in targets)
        states.findings.append(finding("no-surviving-target", BLOCKER, targets[0],
                                       f"every target is lost when {scenario.label} ({where})"))
    elif audited in lost_targets:
        target = next(t for t in targets if t.name == audited)
        states.findings.append(finding(
            "target-in-failed-domain", BLOCKER, target,
            f"the audited snapshot is stored in target {audited} ({placements.path(target.domain)}), "
            f"which is lost when {scenario.label}; audit a surviving target instead "
            f"(dr audit --target {states.surviving_targets[0]})"))
    for item, verdict in states.verdicts:
        if verdict != BLOCKED or item.role == TARGET:
            continue
        if item.role == CREDENTIALS:
            if item.owner in lost_targets:
                continue  # the target itself is gone; its credentials do not matter
            audited_one = item.owner == audited
            states.findings.append(finding(
                "credentials-in-failed-domain", BLOCKER if audited_one else WARNING, item,
                f"the credentials for target {item.owner} are kept at '{item.reference}' in "
                f"{_where(item, scenario, placements)}, which is lost when {scenario.label}: the target "
                f"survives but nobody can reach it" + ("" if audited_one else
                                                       " (it is not the audited target)")))
        elif item.role == KEY:
            states.findings.append(finding(
                "key-in-failed-domain", BLOCKER, item,
                f"the private key that decrypts secret content is kept at '{item.reference}' in "
                f"{_where(item, scenario, placements)}, which is lost when {scenario.label}"))
        elif item.role == DR_IMAGE:
            states.findings.append(finding(
                "dr-image-in-failed-domain", BLOCKER, item,
                f"dr's own image '{item.reference}' is pulled from {_where(item, scenario, placements)}, "
                f"which is lost when {scenario.label}: the restore job cannot start"))
    return states


def _where(item: Essential, scenario: Scenario, placements: Placements) -> str:
    """Its domain's path; or, when its location failed alone, that location in the domain."""
    path = placements.path(item.domain)
    return f"location {item.location} ({path})" if item.location in scenario.lost_locations else str(path)


class _FindingMaker:
    def __init__(self, scenario: Scenario, placements: Placements):
        self.scenario = scenario
        self.placements = placements

    def __call__(self, code: str, severity: str, item: Essential, message: str) -> Finding:
        return Finding(code, severity, message, scenario=self.scenario.name, kind=item.role,
                       reference=item.reference, location=item.how, domain=item.domain,
                       domain_path=self.placements.path(item.domain))
