"""The drill matrix history as one HTML page: per scenario, the measured RTO per phase of every
matrix run as a chart beside the plan's RTO objective, then each matrix run as a table.

Where it sits: `dr drill --history --matrix --format html` renders it from the matrices that
dr.drills.matrix.matrices() groups out of the history, with the charts and page of
dr.drills.history_html (inline SVG: nothing fetched).
"""

from __future__ import annotations

from typing import Any

from dr.drills.history_html import PHASES, Bar, Objective, chart, legend, page, seconds_text, text


def render_matrix_history_html(plan: str, target: str, found: list[dict[str, Any]],
                               rto: Objective | None) -> str:
    body = [f"<h1>Drill matrices of plan {text(plan)} in target {text(target)}</h1>"]
    if not found:
        body.append("<p>No drill matrix recorded yet: run dr drill --plan FILE --matrix --to SCRATCH.</p>")
        return page(f"dr drill matrix history: {plan}", body)
    body += [f"<p>{len(found)} matrix run(s), oldest first. One chart per scenario: each bar is one matrix "
             "run's drill of it. The dashed red line is the plan's tightest RTO objective.</p>",
             legend(PHASES)]
    for name in _scenarios(found):
        bars = [Bar(m["started"][5:19].replace("T", " "), f"matrix {m['id']}: {row['result']}",
                    [(p, float(row["phases"].get(p) or 0.0)) for p in PHASES])
                for m in found for row in m["rows"] if row["scenario"] == name]
        body += [f"<h2>Scenario {text(name)}: measured RTO per phase</h2>",
                 chart(f"measured RTO per phase, scenario {name}", bars, rto, "rto")]
    body.append("<h2>The matrix runs</h2>")
    body += [_table(m) for m in found]
    return page(f"dr drill matrix history: {plan}", body)


def _scenarios(found: list[dict[str, Any]]) -> list[str]:
    """Every scenario of every run, in the order the runs listed them."""
    names: dict[str, None] = {}
    for matrix in found:
        names.update(dict.fromkeys(matrix["scenarios"]))
        names.update(dict.fromkeys(r["scenario"] for r in matrix["rows"]))  # rows of an untagged list
    return list(names)


def _table(matrix: dict[str, Any]) -> str:
    head = "".join(f"<th>{p}</th>" for p in PHASES)
    rows = [f"<h3>Matrix {text(matrix['id'])} (started {text(matrix['started'][:19].replace('T', ' '))})</h3>",
            f"<table><tr><th>scenario</th><th>result</th><th>RPO</th><th>RTO</th>{head}<th>verified</th>"
            "<th>estimated RTO</th></tr>"]
    for row in matrix["rows"]:
        phases = "".join(f"<td>{text(seconds_text(row['phases'].get(p) or 0.0))}</td>" for p in PHASES)
        estimated = row.get("estimated_rto_seconds")
        rows.append(f"<tr><td>{text(row['scenario'])}</td><td>{text(row['result'])}</td>"
                    f"<td>{text(seconds_text(row['rpo_seconds']))}</td><td>{text(seconds_text(row['rto_seconds']))}</td>"
                    f"{phases}<td>{row['verified']}/{row['steps']}</td>"
                    f"<td>{text(seconds_text(estimated)) if estimated is not None else 'none'}</td></tr>")
    missing = [s for s in matrix["scenarios"] if s not in {r["scenario"] for r in matrix["rows"]}]
    rows.append("</table>")
    if missing:
        rows.append(f"<p>Not recorded (the matrix was interrupted): {text(', '.join(missing))}</p>")
    return "\n".join(rows)
