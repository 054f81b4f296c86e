"""The drill history as one HTML page: measured RTO per phase and measured RPO over time, each
drawn as an inline SVG chart beside the plan's objectives, then the drills as a table.

Where it sits: `dr drill --history --format html` renders it from the records in the repository
(dr.drills.history) and the plan's objectives. Nothing is fetched: no script, font or style
from the network, so it opens on a recovery laptop and can be mailed.
"""

from __future__ import annotations

from dataclasses import dataclass
from html import escape
from typing import Any

from dr.model.redaction import redact
from dr.planner.estimating import show

PHASES = ("audit", "plan", "restore", "verify")
# a training drill's phases (dr drill --training, docs/readiness.md section 7), in the order they happen
TRAINING_PHASES = ("checkpoint_download", "failure_detection", "termination_and_restart",
                   "failure_detection_and_restart", "process_group_ready", "load_and_reshard", "first_step",
                   "steady_throughput")
COLOURS = {"audit": "#4e79a7", "plan": "#b07aa1", "restore": "#f28e2b", "verify": "#59a14f", "rpo": "#4e79a7",
           "checkpoint_download": "#f28e2b", "failure_detection_and_restart": "#e15759",
           "failure_detection": "#e15759", "termination_and_restart": "#ff9da7",
           "process_group_ready": "#b07aa1", "load_and_reshard": "#4e79a7", "first_step": "#76b7b2",
           "steady_throughput": "#59a14f"}
OBJECTIVE_COLOUR = "#d62728"
OFF_SCALE = 5.0  # an objective more than this many times the tallest drill is named, not drawn
WIDTH, HEIGHT, LEFT, RIGHT, TOP, BOTTOM = 760, 280, 72, 24, 28, 56


@dataclass
class Objective:
    seconds: float
    source: str  # the source whose objective it is: the tightest in the plan


@dataclass
class Bar:
    label: str  # the drill's start, for the axis
    title: str  # the drill, for a tooltip
    parts: list[tuple[str, float]]  # (colour key, seconds), stacked bottom up


def render_history_html(plan: str, target: str, records: list[dict[str, Any]],
                        rto: Objective | None, rpo: Objective | None) -> str:
    restores = [r for r in records if r.get("kind") != "training"]
    trainings = [r for r in records if r.get("kind") == "training"]
    rto_bars = [Bar(_when(r), _title(r), [(p, float(r["rto"]["phases"].get(p, 0.0))) for p in PHASES])
                for r in restores]
    rpo_bars = [Bar(_when(r), _title(r), [("rpo", float(r["rpo_seconds"]))]) for r in restores]
    body = [f"<h1>Drills of plan {text(plan)} in target {text(target)}</h1>",
            f"<p>{len(records)} drill(s), oldest first. The dashed red line is the plan's tightest objective.</p>",
            "<h2>Measured RTO per phase</h2>", legend(PHASES),
            chart("measured RTO per phase", rto_bars, rto, "rto"),
            "<h2>Measured RPO (age of the data restored)</h2>",
            chart("measured RPO", rpo_bars, rpo, "rpo")]
    if trainings:
        training_bars = [Bar(_when(r), _title(r), [(p, float(r["rto"]["phases"].get(p) or 0.0))
                                                    for p in TRAINING_PHASES]) for r in trainings]
        body += ["<h2>Measured RTO of training per phase (dr drill --training)</h2>",
                 "<p>From the checkpoint's download (a failure drill: from the kill) to steady throughput; "
                 "a phase a drill could not measure is left out of its bar, and the table says which.</p>",
                 legend(TRAINING_PHASES), chart("measured RTO of training per phase", training_bars, rto, "rto")]
    body += ["<h2>The drills</h2>", _table(restores)]
    if trainings:
        body += ["<h2>The training drills</h2>", _training_table(trainings)]
    return page(f"dr drill history: {plan}", body)


def page(title: str, body: list[str]) -> str:
    """A whole page around `body` (already HTML), with the style inline."""
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{text(title)}</title><style>{_STYLE}</style></head>\n<body>\n"
            + "\n".join(body) + "\n</body></html>\n")


_STYLE = ("body{font-family:sans-serif;margin:2em;color:#222} table{border-collapse:collapse} "
          "td,th{border:1px solid #ccc;padding:.25em .6em;text-align:left;white-space:nowrap} .legend span{margin-right:1.2em} "
          ".swatch{display:inline-block;width:.9em;height:.9em;margin-right:.3em;vertical-align:middle}")


def text(value: object) -> str:
    return escape(redact(str(value)))


def _when(record: dict[str, Any]) -> str:
    return record["started"][5:19].replace("T", " ")  # MM-DD HH:MM:SS


def seconds_text(value: float) -> str:
    """Drills of small test plans take milliseconds: show them, not "0.0s"."""
    return f"{value * 1000:.0f} ms" if value < 1 else show(value)


def _title(record: dict[str, Any]) -> str:
    return f"{record['started'][:19]} {record['scenario']}: {record['result']}"


def legend(keys) -> str:
    items = "".join(f'<span><i class="swatch" style="background:{COLOURS[k]}"></i>{k}</span>' for k in keys)
    return f'<p class="legend">{items}<span><i class="swatch" style="background:{OBJECTIVE_COLOUR}"></i>' \
           "objective</span></p>"


def chart(title: str, bars: list[Bar], objective: Objective | None, kind: str) -> str:
    if not bars:
        return "<p>No drills recorded yet: run dr drill --plan FILE --failed DOMAIN --to SCRATCH.</p>"
    tallest = max(sum(s for _, s in b.parts) for b in bars)
    # an objective far above every drill would flatten the bars to nothing: it is then named
    # above the chart instead of drawn to scale
    on_scale = objective is not None and objective.seconds <= OFF_SCALE * tallest
    top = max(tallest, objective.seconds if on_scale else 0.0) * 1.15 or 1.0
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    slot = plot_w / len(bars)
    width = min(48.0, slot * 0.6)

    def y(seconds: float) -> float:  # one scale per chart
        return TOP + plot_h * (1 - seconds / top)

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" role="img" width="{WIDTH}" height="{HEIGHT}" '
             f'viewBox="0 0 {WIDTH} {HEIGHT}" aria-label="{text(title)}">']
    parts += _grid(top, y)
    every = max(1, len(bars) // 10)  # at most ~10 axis labels
    for i, bar in enumerate(bars):
        x = LEFT + slot * i + (slot - width) / 2
        base = 0.0
        for key, seconds in bar.parts:
            parts.append(f'<rect x="{x:.1f}" y="{y(base + seconds):.1f}" width="{width:.1f}" '
                         f'height="{y(base) - y(base + seconds):.1f}" fill="{COLOURS[key]}">'
                         f'<title>{text(bar.title)}: {key} {text(seconds_text(seconds))}</title></rect>')
            base += seconds
        if i % every == 0:
            parts.append(f'<text x="{x + width / 2:.1f}" y="{HEIGHT - BOTTOM + 16}" font-size="11" '
                         f'text-anchor="middle">{text(bar.label)}</text>')
    parts += _objective_line(objective, y, kind, on_scale)
    parts.append("</svg>")
    return "\n".join(parts)


def _grid(top: float, y) -> list[str]:
    lines = [f'<line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{HEIGHT - BOTTOM}" stroke="#444"/>',
             f'<line x1="{LEFT}" y1="{HEIGHT - BOTTOM}" x2="{WIDTH - RIGHT}" y2="{HEIGHT - BOTTOM}" stroke="#444"/>']
    for step in range(1, 5):
        seconds = top * step / 4
        lines.append(f'<line x1="{LEFT}" y1="{y(seconds):.1f}" x2="{WIDTH - RIGHT}" y2="{y(seconds):.1f}" '
                     'stroke="#ddd"/>')
        lines.append(f'<text x="{LEFT - 6}" y="{y(seconds) + 4:.1f}" font-size="11" text-anchor="end">'
                     f'{text(seconds_text(seconds))}</text>')
    return lines


def _objective_line(objective: Objective | None, y, kind: str, on_scale: bool) -> list[str]:
    if objective is None or not on_scale:
        said = f"no {kind} objective in the plan" if objective is None else \
            f"{kind} objective {seconds_text(objective.seconds)} ({objective.source}): far above every drill, off this scale"
        return [f'<text x="{LEFT + 8}" y="{TOP - 10}" font-size="12" fill="{OBJECTIVE_COLOUR}">{text(said)}</text>']
    at = y(objective.seconds)
    return [f'<line x1="{LEFT}" y1="{at:.1f}" x2="{WIDTH - RIGHT}" y2="{at:.1f}" stroke="{OBJECTIVE_COLOUR}" '
            'stroke-width="3" stroke-dasharray="8 5"/>',
            f'<text x="{WIDTH - RIGHT}" y="{at - 6:.1f}" font-size="12" text-anchor="end" fill="{OBJECTIVE_COLOUR}">'
            f'{kind} objective {text(seconds_text(objective.seconds))} ({text(objective.source)})</text>']


def _table(records: list[dict[str, Any]]) -> str:
    rows = ["<table><tr><th>started</th><th>scenario</th><th>result</th><th>RPO</th><th>RTO</th>"
            + "".join(f"<th>{p}</th>" for p in PHASES) + "</tr>"]
    for r in records:
        phases = "".join(f"<td>{text(seconds_text(r['rto']['phases'].get(p, 0.0)))}</td>" for p in PHASES)
        rows.append(f"<tr><td>{text(r['started'][:19].replace('T', ' '))}</td><td>{text(r['scenario'])}</td>"
                    f"<td>{text(r['result'])}</td><td>{text(seconds_text(r['rpo_seconds']))}</td>"
                    f"<td>{text(seconds_text(r['rto']['total_seconds']))}</td>{phases}</tr>")
    return "\n".join(rows + ["</table>"])


def _training_table(records: list[dict[str, Any]]) -> str:
    rows = ["<table><tr><th>started</th><th>scenario</th><th>result</th><th>RTO of training</th>"
            + "".join(f"<th>{p}</th>" for p in TRAINING_PHASES) + "<th>RPO</th></tr>"]
    for r in records:
        measured = {p["phase"]: p for p in r["training"]["phases"]}
        phases = "".join(f"<td>{text(seconds_text(measured[p]['seconds']) if p in measured and measured[p]['measured'] else 'not measured')}</td>"
                         for p in TRAINING_PHASES)
        rpo = r["training"].get("rpo") or {}
        lost = f"{rpo['steps']} steps, {rpo.get('gpu_hours', 0)} GPU-hours" if rpo.get("measured") else "not measured"
        rows.append(f"<tr><td>{text(r['started'][:19].replace('T', ' '))}</td><td>{text(r['scenario'])}</td>"
                    f"<td>{text(r['result'])}</td><td>{text(seconds_text(r['rto']['total_seconds']))}</td>{phases}"
                    f"<td>{text(lost)}</td></tr>")
    return "\n".join(rows + ["</table>"])
