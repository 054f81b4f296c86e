"""A drill record and the drill history as text: what happened, measured, and the trend.

Where it sits: `dr drill` prints drill_lines() of the record it wrote; `dr drill --history`
prints history_lines(). The JSON forms are the records themselves (dr.drills.drilling).
"""

from __future__ import annotations

from typing import Any

from dr.model.redaction import redact
from dr.planner.estimating import show


def _seconds(value: float | None) -> str:
    return "-" if value is None else show(value)


def drill_lines(record: dict[str, Any]) -> list[str]:
    rto, audit = record["rto"], record["audit"]
    phases = ", ".join(f"{name} {show(s)}" for name, s in rto["phases"].items())
    estimate = record["rto_estimate"]
    lines = [
        f"drill {record['id']} of plan {record['plan']}: {record['scenario']}; snapshot "
        f"{record['snapshot']['id'][:8]} from target {record['target']}",
        f"  result: {record['result'].upper()}: {record['summary']}",
        f"  measured RPO: {show(record['rpo_seconds'])} (age of the data restored)",
        f"  measured RTO: {show(rto['total_seconds'])} ({phases})",
        f"  estimated RTO: {'' if estimate['complete'] else 'at least '}{show(estimate['total_seconds'])} "
        "(incident parts the drill cannot measure included)",
        f"  audit: {audit['blockers']} blocker(s), {audit['warnings']} warning(s), {audit['remaps']} remap(s)",
    ]
    verified = {c["step"]: c for c in record["verify"]["steps"]}
    for step in record["restore"]["steps"]:
        check = verified.get(step["step"], {})
        state = "verified" if check.get("verified") else "NOT verified"
        lines.append(f"  {step['step']}: {step['status']} in {show(step['seconds'])}, {state}: "
                     f"{check.get('reason', step['reason'])}")
        if step["status"] != "succeeded":
            lines.append(f"      why: {step['reason']}")
    lines.append(f"  recorded as {record.get('key', 'drills/' + record['id'] + '.json')}")
    return [redact(line) for line in lines]


def training_lines(record: dict[str, Any]) -> list[str]:
    """A training drill's record for people: the copy, the phases (measured or why not), the
    continuity checks and the RPO in steps, time and GPU-hours."""
    t = record["training"]
    lines = [f"training drill {record['id']} of plan {record['plan']}: {record['scenario']}; snapshot "
             f"{record['snapshot']['id'][:8]} from target {record['target']}",
             f"  result: {record['result'].upper()}: {record['summary']}",
             f"  checkpoint: step {t['checkpoint']['step']} ({t['checkpoint']['resume'] or 'resume not judged'}); "
             f"copy {t['copy']['why']}"]
    if t.get("failure"):
        lines.append(f"  failure: {t['failure']['killed']}")
    if t.get("incomplete"):
        lines.append(f"  incomplete copy: {t['incomplete']}")
    if t["phases"]:
        lines.append(f"  measured RTO of training: {show(record['rto']['total_seconds'])}"
                     if record["rto"]["total_seconds"] else "  measured RTO of training: not complete (see phases)")
        lines.append(f"  {'phase':<26} {'seconds':>9}  how")
        for p in t["phases"]:
            seconds = show(p["seconds"]) if p["measured"] else \
                (f"~{show(p['estimated_seconds'])}" if "estimated_seconds" in p else "-")
            how = p["how"] if p["measured"] else \
                (f"estimated: {p['estimate_basis']}" if "estimate_basis" in p else f"not measured: {p['how']}")
            lines.append(f"  {p['phase']:<26} {seconds:>9}  {how}")
        if t.get("rto_with_estimates_seconds") and t["rto_with_estimates_seconds"] != record["rto"]["total_seconds"]:
            lines.append(f"  with the plan's estimates of the rest: {show(t['rto_with_estimates_seconds'])}")
    for c in t["checks"]:
        state = {True: "ok", False: "FAILED", None: "not checked"}[c["ok"]]
        lines.append(f"  check {c['check']}: {state}: {c['detail']}")
    rpo = t["rpo"]
    if rpo.get("measured"):
        cost = f", {rpo['cost']} in GPU cost" if "cost" in rpo else ""
        lines.append(f"  RPO: {rpo['steps']} steps, {show(rpo['seconds'])}, {rpo['gpu_hours']} GPU-hours "
                     f"({rpo['gpus']} GPUs){cost}")
    elif rpo:
        lines.append(f"  RPO: not measured: {rpo['how']}")
    if t.get("process"):
        p = t["process"]
        lines.append(f"  process: {p['stopped']} after {p['steps_after_load']} steps (exit {p['exit_code']}); "
                     f"its output: {p['output']}")
    lines.append(f"  recorded as {record.get('key', 'drills/' + record['id'] + '.json')}")
    return [redact(line) for line in lines]


def history_lines(records: list[dict[str, Any]], summary: dict[str, Any], target: str) -> list[str]:
    if not records:
        return [f"no drills recorded in target {target} yet: run dr drill --plan FILE --failed DOMAIN --to SCRATCH"]
    lines = [f"{len(records)} drill(s) in target {target}, oldest first",
             f"  {'started':<20} {'scenario':<28} {'snapshot':<9} {'RPO':>9} {'RTO':>9}  {'verified':<9} result"]
    for r in records:
        steps = r["verify"]["steps"]
        ok = sum(1 for c in steps if c["verified"])
        lines.append(f"  {r['started'][:19]:<20} {r['scenario'][:28]:<28} {r['snapshot']['id'][:8]:<9} "
                     f"{show(r['rpo_seconds']):>9} {show(r['rto']['total_seconds']):>9}  "
                     f"{f'{ok}/{len(steps)}':<9} {r['result']}")
    lines += _trend_lines(summary)
    return [redact(line) for line in lines]


def _trend_lines(summary: dict[str, Any]) -> list[str]:
    lines = ["trend: " + ", ".join(f"{n} {result}" for result, n in sorted(summary["results"].items()))]
    for label, key in (("RTO", "rto_seconds"), ("RPO", "rpo_seconds")):
        series = summary.get(key) or {}
        if not series:
            continue
        change = series.get("change")
        versus = "" if change is None else \
            f" ({'+' if change >= 0 else '-'}{show(abs(change))} against the previous drill)"
        lines.append(f"  {label}: last {_seconds(series['last'])}{versus}; best {_seconds(series['best'])}, "
                     f"median {_seconds(series['median'])}, worst {_seconds(series['worst'])}")
    return lines


def matrix_lines(rows: list[dict[str, Any]], heading: str) -> list[str]:
    """The drill matrix as one table: per scenario, the result, measured RPO and RTO, per phase."""
    lines = [heading, f"  {'scenario':<24} {'result':<10} {'RPO':>9} {'RTO':>9} {'audit':>8} {'plan':>8} "
             f"{'restore':>8} {'verify':>8}  {'verified':<9} estimated RTO"]
    for r in rows:
        phases = r["phases"]
        lines.append(f"  {r['scenario'][:24]:<24} {r['result']:<10} {show(r['rpo_seconds']):>9} "
                     f"{show(r['rto_seconds']):>9} " + " ".join(f"{_seconds(phases[p]):>8}" for p in phases)
                     + f"  {str(r['verified']) + '/' + str(r['steps']):<9} {_seconds(r['estimated_rto_seconds'])}")
    return [redact(line) for line in lines]


def matrix_history_lines(found: list[dict[str, Any]], target: str) -> list[str]:
    if not found:
        return [f"no drill matrix recorded in target {target} yet: run dr drill --plan FILE --matrix --to SCRATCH"]
    lines = [f"{len(found)} drill matrix run(s) in target {target}, oldest first"]
    for matrix in found:
        lines += matrix_lines(matrix["rows"], f"matrix {matrix['id']} (started {matrix['started'][:19]})")
        missing = [s for s in matrix["scenarios"] if s not in {r["scenario"] for r in matrix["rows"]}]
        if missing:
            lines.append(f"  not recorded (the matrix was interrupted): {', '.join(missing)}")
    return lines
