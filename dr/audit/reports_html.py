"""The audit as one self-contained HTML file: the pictures first, then the findings table.

Blockers lead the table; the scenario summary closes the page.

Each scenario's restore dependency graph is drawn by Graphviz (dr.audit.graphs) and inlined
as SVG: no script, no stylesheet or font from elsewhere, so the file can be attached to an
incident and opened offline. Without Graphviz the page says so where the picture would be,
and keeps the DOT source so it can be drawn elsewhere. Every piece of text from the plan or
the catalog goes through html.escape.
"""

from __future__ import annotations

import html

from dr.audit import graphs
from dr.audit.audits import AuditReport, ScenarioResult
from dr.audit.findings import SEVERITIES, Finding
from dr.model.recovery import VERDICTS
from dr.model.redaction import redact

_CSS = """
body { font-family: -apple-system, Segoe UI, Helvetica, Arial, sans-serif; margin: 1.5em; color: #212121; }
h1 { font-size: 1.5em; margin-bottom: .2em; }
.verdict-blocked { color: #c62828; } .verdict-ok { color: #2e7d32; }
figure { margin: 1em 0 2em; border: 1px solid #cfd8dc; padding: .5em; overflow-x: auto; }
figure svg { max-width: 100%; height: auto; }
figcaption { font-weight: bold; margin-bottom: .5em; }
.missing { background: #fff3e0; border-left: 4px solid #ef6c00; padding: .7em; }
.legend span { display: inline-block; padding: .1em .6em; margin-right: .5em; border-radius: 4px; }
table { border-collapse: collapse; width: 100%; font-size: .9em; }
th, td { border: 1px solid #cfd8dc; padding: .35em .5em; vertical-align: top; text-align: left; }
th { background: #eceff1; }
tr.blocker td:first-child { background: #c62828; color: white; font-weight: bold; }
tr.warning td:first-child { background: #ffe0b2; }
tr.info td:first-child { background: #ffca28; }
code { font-size: .95em; word-break: break-all; }
"""

LIMIT = 100  # rows per scenario and code; the JSON report has every finding
_LEGEND = ('<p class="legend"><span style="background:#c62828;color:white">blocker</span>'
           '<span style="background:#ffca28">remapped from the snapshot\'s copy</span>'
           '<span style="background:#eeeeee;border:1px dashed #757575">placed nowhere</span>'
           '<span style="background:#e8f5e9">survives</span>'
           '<span style="background:#fdecea;border:2px solid #c62828">failed domain</span></p>')


def e(text: object) -> str:
    return html.escape(redact(str(text)), quote=True)


def render_html(report: AuditReport, runbook_base: str = "", dot_program: str = "dot") -> str:
    verdict = "BLOCKED" if report.blocked else "recoverable"
    parts = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
             f"<title>DR audit: {e(report.plan)}: {verdict}</title>", f"<style>{_CSS}</style></head><body>",
             f'<h1>DR audit of plan <code>{e(report.plan)}</code>: '
             f'<span class="verdict-{"blocked" if report.blocked else "ok"}">{verdict}</span></h1>',
             f"<p>{e(report.summary_line())}.</p>", _LEGEND]
    parts += [_figure(report, result, dot_program) for result in report.scenarios]
    parts += [_findings_table(report, runbook_base), _readiness(report), _scenario_table(report),
              "</body></html>"]
    return "\n".join(parts) + "\n"


def _figure(report: AuditReport, result: ScenarioResult, dot_program: str) -> str:
    dot = graphs.build_dot(report, result)
    svg, problem = graphs.render_svg(dot, dot_program)
    caption = f"<figcaption>If {e(result.scenario.label)}: what the restore needs</figcaption>"
    if svg is not None:
        return f'<figure id="graph-{e(result.name)}">{caption}{svg}</figure>'
    return (f'<figure id="graph-{e(result.name)}">{caption}<p class="missing"><strong>No picture:</strong> '
            f"{e(problem)}</p><details><summary>Graph source (DOT)</summary><pre>{e(dot)}</pre>"
            "</details></figure>")


def _scenario_table(report: AuditReport) -> str:
    head = "".join(f"<th>{e(v)} deps</th>" for v in VERDICTS)
    rows = []
    for result in report.scenarios:
        cells = "".join(f"<td>{result.counts[v]}</td>" for v in VERDICTS)
        rows.append(f"<tr><td>{e(result.scenario.label)}</td><td>{e(result.scenario.lost_summary)}</td>"
                    f"<td>{e(', '.join(result.essentials.surviving_targets) or 'none')}</td>{cells}</tr>")
    return ("<h2>Scenarios</h2><table><tr><th>Scenario</th><th>Lost domains</th><th>Surviving targets</th>"
            f"{head}</tr>{''.join(rows)}</table>")


def _readiness(report: AuditReport) -> str:
    """What the readiness scenario holds (its findings are rows of the findings table)."""
    readiness = report.readiness
    if not readiness.shown:
        if not readiness.total:
            return ""
        return (f'<p id="readiness">The snapshot records {readiness.total} readiness finding(s) (go-live checks), '
                "not listed here: <code>dr audit --readiness</code> lists them.</p>")
    if not readiness.total:
        return '<h2>Readiness</h2><p id="readiness">No readiness finding: the snapshot\'s sources recorded none.</p>'
    items = "".join(f"<li><code>{e(name)}</code>: {count}</li>" for name, count in readiness.recorded.items())
    return (f'<h2>Readiness</h2><p id="readiness">{readiness.total} go-live finding(s), rows of the table above '
            f'(scenario <code>readiness</code>), each linking its runbook:</p><ul>{items}</ul>')


def _findings_table(report: AuditReport, runbook_base: str) -> str:
    if not report.findings:
        return '<h2>Findings</h2><p id="findings">None: everything a restore needs survives every scenario.</p>'
    rows = "".join(_rows(report, runbook_base))
    return ('<h2>Findings</h2><table id="findings"><tr><th>Severity</th><th>Finding</th><th>Scenario</th>'
            "<th>Reference</th><th>Placed in</th><th>Needed by</th><th>What happened</th><th>What to do</th></tr>"
            f"{rows}</table>")


def _rows(report: AuditReport, runbook_base: str):
    shown: dict[tuple[str | None, str], int] = {}
    # Blockers lead; within a severity, the report's order (scenario, code, reference) holds.
    for finding in sorted(report.findings, key=lambda f: SEVERITIES.index(f.severity)):
        key = (finding.scenario, finding.code)
        shown[key] = shown.get(key, 0) + 1
        if shown[key] <= LIMIT:
            yield _row(finding, runbook_base)
    for (scenario, code), count in shown.items():
        if count > LIMIT:
            yield (f'<tr class="more"><td colspan="8">... and {count - LIMIT:,} more {e(code)} findings in '
                   f"{e(scenario or 'every scenario')} (every finding is in dr audit --json)</td></tr>")


def _row(finding: Finding, runbook_base: str) -> str:
    link = f"{runbook_base}{finding.runbook}"
    placed = e(finding.domain_path) + (f"<br><small>by {e(finding.location)}</small>" if finding.location else "") \
        if finding.domain_path else "<em>nowhere</em>" if finding.code == "unknown-location" else ""
    needed = ""
    if finding.artifacts_affected:
        needed = f"{finding.artifacts_affected:,} reference(s)<br>" + "<br>".join(
            f"<code>{e(x)}</code>" for x in finding.examples[:3])
    elif finding.sources:
        needed = "source " + ", ".join(f"<code>{e(s)}</code>" for s in finding.sources)
    if finding.backup:
        backup = finding.backup
        needed = (f"recorded by the backup of source <code>{e(backup['source'])}</code>: "
                  f"<code>{e(backup['code'])}</code> ({e(backup['severity'] or '-')})"
                  + (f" on <code>{e(backup['object'])}</code>" if backup["object"] else ""))
    return (f'<tr class="{e(finding.severity)}"><td>{e(finding.severity)}</td>'
            f'<td><a href="{e(link)}">{e(finding.code)}</a></td>'
            f"<td>{e(finding.scenario or 'every scenario')}</td>"
            f"<td><code>{e(finding.reference or '-')}</code><br><small>{e(finding.kind)}</small></td>"
            f"<td>{placed}</td><td>{needed}</td><td>{e(finding.message)}</td><td>{e(finding.action)}</td></tr>")
