"""What every restore needs besides the artifacts' own dependencies, checked in every audit.

- dr's repository targets: at least one outside the failed domains, and the audited one too;
- the credentials that reach each surviving target (targets[].credentials_location);
- the private key that decrypts secret content (encryption.key_location), when anything is
  encrypted or the plan has recipients;
- dr's own image (dr_image): the restore job has to be pulled from somewhere.

None of these can be rebuilt from the snapshot (the snapshot is behind them), so no remap
applies. A reference nothing places, or an essential the plan does not declare, is an
unknown-location finding that holds in every scenario.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from dr.audit.findings import BLOCKER, WARNING, Finding
from dr.audit.judging import BLOCKED, OK, UNKNOWN, Placements
from dr.audit.scenarios import Scenario
from dr.model.plans import Plan, TargetSpec

TARGET, CREDENTIALS, KEY, DR_IMAGE = "target", "credentials", "key", "dr-image"


@dataclass(frozen=True)
class Essential:
    role: str  # target, credentials, key, dr-image
    name: str  # the target's name, or the plan field
    reference: str  # "" when the plan does not declare it
    domain: str | None
    how: str | None  # how it was placed
    owner: str | None = None  # the target whose credentials these are


@dataclass
class EssentialStates:
    """One scenario's view of the essentials, for findings and the picture."""

    verdicts: list[tuple[Essential, str]] = field(default_factory=list)
    surviving_targets: list[str] = field(default_factory=list)
    copies_survive: bool = False  # the audited snapshot's target survives and can be reached
    findings: list[Finding] = field(default_factory=list)


def _remote(target: TargetSpec) -> bool:
    return "://" in target.url and not target.url.lower().startswith("file://")


def essentials(plan: Plan, placements: Placements, needs_key: bool) -> list[Essential]:
    items = []
    for target in plan.spec.targets:
        items.append(Essential(TARGET, target.name, target.url, target.domain, "targets[].domain"))
        if target.credentials_location or _remote(target):
            items.append(_placed(placements, CREDENTIALS, f"{target.name} credentials",
                                 target.credentials_location, owner=target.name))
    if needs_key:
        items.append(_placed(placements, KEY, "encryption.key_location", plan.spec.encryption.key_location))
    items.append(_placed(placements, DR_IMAGE, "dr_image", plan.spec.dr_image))
    return items


def _placed(placements: Placements, role: str, name: str, reference: str | None,
            owner: str | None = None) -> Essential:
    if not reference:
        return Essential(role, name, "", None, None, owner)
    placement = placements.place(reference)
    return Essential(role, name, reference, placement.domain, placements.how(placement), owner)


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


def judge_essentials(items: list[Essential], scenario: Scenario, audited: str,
                     placements: Placements) -> EssentialStates:
    states = EssentialStates()
    lost_targets = {i.name for i in items if i.role == TARGET and scenario.loses(i.domain)}
    lost_credentials = {i.owner for i in items if i.role == CREDENTIALS and scenario.loses(i.domain)}
    for item in items:
        verdict = UNKNOWN if item.domain is None else (BLOCKED if scenario.loses(item.domain) else OK)
        states.verdicts.append((item, verdict))
    targets = [i for i in items if i.role == TARGET]
    states.surviving_targets = [t.name for t in targets if t.name not in lost_targets]
    states.copies_survive = audited not in lost_targets and audited not in lost_credentials
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
                f"{placements.path(item.domain)}, which is lost when {scenario.label}: the target "
                f"survives but nobody can reach it" + ("" if audited_one else
                                                       " (it is not the audited target)")))
        elif item.role == KEY:
            states.findings.append(finding(
                "key-in-failed-domain", BLOCKER, item,
                f"the private key that decrypts secret content is kept at '{item.reference}' in "
                f"{placements.path(item.domain)}, which is lost when {scenario.label}"))
        elif item.role == DR_IMAGE:
            states.findings.append(finding(
                "dr-image-in-failed-domain", BLOCKER, item,
                f"dr's own image '{item.reference}' is pulled from {placements.path(item.domain)}, "
                f"which is lost when {scenario.label}: the restore job cannot start"))
    return states


class _FindingMaker:
    def __init__(self, scenario: Scenario, placements: Placements):
        self.scenario = scenario
        self.placements = placements

    def __call__(self, code: str, severity: str, item: Essential, message: str) -> Finding:
        return Finding(code, severity, message, scenario=self.scenario.name, kind=item.role,
                       reference=item.reference, location=item.how, domain=item.domain,
                       domain_path=self.placements.path(item.domain))
