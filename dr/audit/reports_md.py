"""The audit as Markdown: for an incident channel or a pull request.

Leads with the verdict and the counts, then one section per scenario, blockers first. Every
finding links its runbook. Text from the plan and the catalog is escaped, so a reference can
not turn into a link, a heading or markup.
"""

from __future__ import annotations

import re

from dr.audit.audits import AuditReport, ScenarioResult
from dr.audit.findings import Finding
from dr.model.recovery import VERDICTS
from dr.model.redaction import redact

LIMIT = 20  # findings shown per scenario and code; the JSON report has every one
_SPECIAL = re.compile(r"([\\`*_{}\[\]<>|~])")


def escape(text: object) -> str:
    return _SPECIAL.sub(r"\\\1", redact(str(text))).replace("\n", " ")


def code(text: object) -> str:
    """Inline code; backticks inside cannot close it early."""
    return "`" + redact(str(text)).replace("`", "'").replace("\n", " ") + "`"


def render_markdown(report: AuditReport, runbook_base: str = "") -> str:
    lines = _header(report)
    lines += _scenario_table(report)
    general = report.findings_for(None)
    if general:
        lines += ["", "## In every scenario", ""]
        lines += _findings(general, runbook_base)
    for result in report.scenarios:
        lines += _scenario_section(report, result, runbook_base)
    lines += _readiness_section(report, runbook_base)
    return "\n".join(lines) + "\n"


def _readiness_section(report: AuditReport, runbook_base: str) -> list[str]:
    """The readiness scenario: go-live checks the backup ran, each with its own runbook."""
    readiness = report.readiness
    if not readiness.shown:
        if not readiness.total:
            return []
        return ["", f"The snapshot records {readiness.total} readiness finding(s) (go-live checks: "
                "disruption budgets, serving high availability, spot capacity), not listed here: "
                "`dr audit --readiness` lists them."]
    lines = ["", "## Readiness (go-live checks)", ""]
    findings = report.findings_for("readiness")
    if not findings:
        return lines + ["No readiness finding: the snapshot's sources recorded none."]
    counts = ", ".join(f"{code(name)} {count}" for name, count in readiness.recorded.items())
    return lines + [f"{len(findings)} finding(s): {counts}.", ""] + _findings(findings, runbook_base)


def _header(report: AuditReport) -> list[str]:
    verdict = "BLOCKED" if report.blocked else "recoverable"
    snap = report.snapshot
    if snap is None:
        about = f"no snapshot in target {code(report.target)}"
    else:
        about = (f"snapshot {code(snap.short_id)} ({snap.time:%Y-%m-%d %H:%M}Z, {snap.artifacts:,} artifacts, "
                 f"{snap.references:,} dependency references, {snap.distinct_references:,} distinct) "
                 f"in target {code(report.target)}")
    return [f"# DR audit of plan {code(report.plan)}: {verdict}", "",
            f"**{report.blockers} blocker(s)**, {report.warnings} warning(s), {report.infos} remap(s); "
            f"{about}; generated {report.generated_at:%Y-%m-%d %H:%M:%S}Z"
            + ("; strict (unknown locations are blockers)" if report.strict else "") + "."]


def _scenario_table(report: AuditReport) -> list[str]:
    lines = ["", "| Scenario | Lost domains | Surviving targets | Blockers | "
             + " | ".join(f"{v} deps" for v in VERDICTS) + " |",
             "|---|---|---|---|" + "---|" * len(VERDICTS)]
    for result in report.scenarios:
        blockers = sum(1 for f in report.findings_for(result.name) if f.severity == "blocker")
        lines.append(f"| {escape(result.scenario.label)} | {escape(result.scenario.lost_summary)} | "
                     f"{escape(', '.join(result.essentials.surviving_targets) or 'none')} | {blockers} | "
                     + " | ".join(str(result.counts[v]) for v in VERDICTS) + " |")
    return lines


def _scenario_section(report: AuditReport, result: ScenarioResult, runbook_base: str) -> list[str]:
    findings = report.findings_for(result.name)
    lines = ["", f"## Scenario: {escape(result.scenario.label)}", ""]
    if not findings:
        return lines + ["Nothing a restore needs is lost in this scenario."]
    return lines + _findings(findings, runbook_base)


def _findings(findings: list[Finding], runbook_base: str) -> list[str]:
    lines: list[str] = []
    shown: dict[str, int] = {}
    for finding in findings:
        shown[finding.code] = shown.get(finding.code, 0) + 1
        if shown[finding.code] <= LIMIT:
            lines += _finding(finding, runbook_base)
    for code_name, count in shown.items():
        if count > LIMIT:
            lines.append(f"- ... and {count - LIMIT:,} more {code_name} finding(s) here "
                         "(every finding is in dr audit --json)")
    return lines


def _finding(finding: Finding, runbook_base: str) -> list[str]:
    link = f"{runbook_base}{finding.runbook}"
    lines = [f"- **{finding.severity.upper()}** [{finding.code}]({link}): {escape(finding.message)}."]
    if finding.domain_path:
        lines.append(f"  - placed in {code(finding.domain_path)}"
                     + (f" by {escape(finding.location)}" if finding.location else ""))
    if finding.artifacts_affected:
        examples = ", ".join(code(e) for e in finding.examples[:3])
        lines.append(f"  - needed by {finding.artifacts_affected:,} reference(s), e.g. {examples}")
    if finding.backup:
        backup = finding.backup
        lines.append(f"  - recorded by the backup of source {code(backup['source'])}: {code(backup['code'])} "
                     f"({escape(backup['severity'] or '-')})"
                     + (f" on {code(backup['object'])}" if backup["object"] else ""))
    lines.append(f"  - what to do: {escape(finding.action)}")
    return lines
