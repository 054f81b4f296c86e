"""What the backup itself noticed: the exporters' findings kept in the snapshot manifest.

An exporter records a problem it notices while exporting (ExportContext.finding: a Kueue
ClusterQueue naming a ResourceFlavor that does not exist, a Certificate whose issuer is not in
the backup, a checkpoint whose DR copy failed). The manifest keeps them with the source
(docs/format.md, "Snapshot manifest"); the audit reports each one of the audited snapshot as a
`backup-finding`, and `dr status` lists those of each source's newest snapshot.

Severity: an exporter's `error` (the source captured less than it should) is a warning, a
blocker under strict, as something not backed up is; `warning` and `info` stay what they are.
The finding names its object: the `object` fact when the exporter gives one, else the first of
a few facts exporters use for it (`referrer`, `identity`, `path` ...). An `action` fact, when
given, is the finding's "what to do". These findings hold in every scenario.

An exporter may say which audit finding its finding is (fact `audit_code`, one of the audit's
codes, dr.audit.findings.CODES: its runbook then applies) and that it makes recovery
impossible (fact `blocks_recovery: true`: a blocker whatever its backup severity). The
kubernetes exporter does for a SealedSecret that no backed-up key opens.

Readiness findings (go-live checks: PodDisruptionBudgets, serving high availability, spot
capacity) are the ones an exporter records with the fact `category: readiness`. They do not say
that recovery needs something lost, so the failure scenarios leave them out; `dr audit
--readiness` lists them in a scenario of their own, `readiness`, as `readiness-finding`, each
with the runbook the exporter names (the fact `runbook`, `runbooks/<code>.md`). Their severity
is the exporter's (`error` counts as `warning`); with `--strict` a warning is a blocker, so a CI
gate can refuse a platform that is not ready to go live.

A record with `category: readiness-fact` is no problem but facts a readiness check joins across
sources (the spot-capable jobs, for spot-save-exceeds-notice: dr.audit.spot_saves); one with
`category: inventory` accounts for what the backup held (the kubernetes exporter's served types,
each with its count or the reason it is not exported). Neither is listed nor counted.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from dr.audit.findings import BLOCKER, CODES, INFO, WARNING, Finding
from dr.model.snapshots import Snapshot, SourceResult

# The facts exporters name the object of a finding with, in the order they are tried.
OBJECT_FACTS = ("object", "referrer", "identity", "path", "image", "repository", "model", "cluster",
                "zone", "url", "root", "tier", "run")
_SEVERITIES = {"warning": WARNING, "info": INFO}
READINESS = "readiness"  # the `category` fact of a readiness finding, and the scenario's name
FACT = "readiness-fact"  # the `category` of a record that states facts for a check, not a problem
INVENTORY = "inventory"  # the `category` of a record that accounts for what was backed up
_RUNBOOK = re.compile(r"runbooks/[a-z0-9][a-z0-9-]*\.md")


def is_readiness(recorded: dict[str, Any]) -> bool:
    return recorded.get("category") == READINESS


def is_fact(recorded: dict[str, Any]) -> bool:
    """A record a check joins across sources (dr.audit.spot_saves), or an exporter's account of
    what it backed up (`category: inventory`: the kubernetes exporter's served types and their
    counts): never listed as a finding."""
    return recorded.get("category") in (FACT, INVENTORY)


def finding_object(facts: dict[str, Any]) -> str:
    """The object an exporter's finding is about, '' when it names none."""
    for key in OBJECT_FACTS:
        value = facts.get(key)
        if isinstance(value, (str, int)) and str(value):
            return str(value)
    return ""


def source_findings(result: SourceResult) -> list[dict[str, Any]]:
    """One source's findings as `dr status` shows them: code, severity, object, message."""
    return [{"code": str(f.get("code", "")), "severity": str(f.get("severity", "")),
             "object": finding_object(f) or None, "message": str(f.get("message", ""))}
            for f in result.findings if not is_fact(f)]


def backup_findings(snapshot: Snapshot, strict: bool = False) -> list[Finding]:
    """Every finding the backup recorded except the readiness ones."""
    return [_finding(snapshot, result.name, recorded, strict)
            for result in snapshot.sources for recorded in result.findings
            if not is_readiness(recorded) and not is_fact(recorded)]


def readiness_counts(snapshot: Snapshot | None) -> dict[str, int]:
    """The exporters' readiness codes in the snapshot, with how many of each."""
    if snapshot is None:
        return {}
    counts = Counter(str(f.get("code", "")) or "unnamed" for result in snapshot.sources
                     for f in result.findings if is_readiness(f))
    return dict(sorted(counts.items()))


def readiness_findings(snapshot: Snapshot, strict: bool = False) -> list[Finding]:
    """The readiness findings, as the `readiness` scenario lists them."""
    findings = []
    for result in snapshot.sources:
        for recorded in filter(is_readiness, result.findings):
            finding = _finding(snapshot, result.name, recorded, strict=False, code="readiness-finding")
            finding.scenario = READINESS
            if strict and finding.severity == WARNING:
                finding.severity = BLOCKER
            runbook = recorded.get("runbook")
            finding.runbook_path = runbook if isinstance(runbook, str) and _RUNBOOK.fullmatch(runbook) else None
            findings.append(finding)
    return findings


def _finding(snapshot: Snapshot, source: str, recorded: dict[str, Any], strict: bool,
             code: str = "backup-finding") -> Finding:
    recorded_code = str(recorded.get("code", "")) or "unnamed"
    severity = str(recorded.get("severity", ""))
    audit_severity = _SEVERITIES.get(severity, BLOCKER if strict else WARNING)
    if recorded.get("blocks_recovery") is True:
        audit_severity = BLOCKER
    audit_code = recorded.get("audit_code")
    obj = finding_object(recorded)
    action = recorded.get("action")
    message = (f"the backup of source {source} (snapshot {snapshot.short_id}) recorded {severity or 'a'} "
               f"{recorded_code}" + (f" on {obj}" if obj else "") + f": {recorded.get('message', '')}")
    if code == "backup-finding" and audit_code in CODES:
        code = audit_code  # the exporter names the audit finding (and so the runbook) it is
    return Finding(code, audit_severity, message, kind=recorded_code, reference=obj or source,
                   sources=[source], action=action if isinstance(action, str) else "",
                   backup={"source": source, "code": recorded_code, "severity": severity, "object": obj or None})
