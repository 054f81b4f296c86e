"""The samples of each command's run, from the document the command prints with --json.

A sample's labels are exactly its metric's (dr.metrics.catalog); a mismatch is a bug in dr and
fails loudly. `plan` and, where there is one, `source` are also the Pushgateway grouping key.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable

from dr.metrics.catalog import METRICS

BACKUP_SEVERITIES = ("error", "warning", "info")  # what exporters report (ExportContext.finding)
AUDIT_SEVERITIES = ("blocker", "warning", "info")


@dataclass(frozen=True)
class Sample:
    name: str
    labels: tuple[tuple[str, str], ...]
    value: float

    @classmethod
    def of(cls, name: str, value: float, **labels: str) -> "Sample":
        wanted = METRICS[name].labels
        if set(labels) != set(wanted):
            raise ValueError(f"metric {name} takes labels {wanted}, got {sorted(labels)}")
        return cls(name, tuple((key, str(labels[key])) for key in wanted), float(value))

    def label(self, key: str) -> str | None:
        return dict(self.labels).get(key)


def run_label(source_names: Iterable[str]) -> str:
    """The `source` label of a run's own metrics: the run's sources, sorted, comma-joined."""
    return ",".join(sorted(source_names))


def backup_samples(plan: str, results: list[dict[str, Any]], schedules: dict[str, float],
                   now: float) -> list[Sample]:
    """`results`: dr backup's --json results; `schedules`: source -> its schedule's longest gap."""
    samples: list[Sample] = []
    for result in results:
        target = result["target"]
        for source in result["sources"]:
            samples += _source_samples(plan, target, source, now)
        if result["snapshot"]:  # no snapshot, no run to describe: every source failed
            names = run_label(s["name"] for s in result["sources"])
            samples += _run_samples(plan, target, names, result["stats"])
    ran = {s["name"] for r in results for s in r["sources"]}
    samples += [Sample.of("dr_backup_schedule_interval_seconds", gap, plan=plan, source=name)
                for name, gap in sorted(schedules.items()) if name in ran]
    return samples


def _source_samples(plan: str, target: str, source: dict[str, Any], now: float) -> list[Sample]:
    labels = {"plan": plan, "source": source["name"], "target": target}
    findings = source.get("findings", [])
    ok = "error" not in source and not any(f.get("severity") == "error" for f in findings)
    stamp = "dr_backup_last_success_timestamp_seconds" if ok else "dr_backup_last_failure_timestamp_seconds"
    samples = [Sample.of("dr_backup_success", int(ok), **labels), Sample.of(stamp, now, **labels),
               Sample.of("dr_backup_artifacts", source.get("artifacts", 0), **labels),
               Sample.of("dr_backup_source_bytes", source.get("bytes", 0), **labels)]
    severities = sorted(set(BACKUP_SEVERITIES) | {f.get("severity", "") for f in findings} - {""})
    samples += [Sample.of("dr_backup_findings", sum(1 for f in findings if f.get("severity") == severity),
                          severity=severity, **labels) for severity in severities]
    return samples


_RUN_STATS = {"dr_backup_duration_seconds": "duration_seconds", "dr_backup_read_bytes": "bytes_read",
              "dr_backup_uploaded_bytes": "bytes_uploaded", "dr_backup_reused_bytes": "bytes_reused",
              "dr_backup_transferred_bytes": "bytes_transferred", "dr_backup_uploaded_blobs": "blobs_uploaded",
              "dr_backup_reused_artifacts": "artifacts_reused"}


def _run_samples(plan: str, target: str, sources: str, stats: dict[str, Any]) -> list[Sample]:
    return [Sample.of(name, stats.get(key, 0), plan=plan, source=sources, target=target)
            for name, key in _RUN_STATS.items()]


def status_samples(plan: str, target: str, status: dict[str, Any],
                   objectives: dict[str, dict[str, float]]) -> list[Sample]:
    """`status`: dr status's --json; `objectives`: source -> {"rpo": s, "rto": s} where set."""
    samples: list[Sample] = []
    for row in status["sources"]:
        labels = {"plan": plan, "source": row["source"], "target": target}
        if row["age_seconds"] is not None:
            samples.append(Sample.of("dr_rpo_age_seconds", row["age_seconds"], **labels))
        samples.append(Sample.of("dr_rpo_breach", int(bool(row["breach"])), **labels))
    for row in status["runs"]:
        samples.append(Sample.of("dr_rpo_copy_breach", int(bool(row["breach"])), plan=plan, source=row["source"],
                                 target=target, subject=row["subject"]))
    samples.append(Sample.of("dr_status_problems", len(status.get("problems", [])), plan=plan, target=target))
    for source, objective in sorted(objectives.items()):
        for kind in ("rpo", "rto"):
            if objective.get(kind) is not None:
                samples.append(Sample.of(f"dr_{kind}_objective_seconds", objective[kind], plan=plan, source=source))
    return samples


def status_run_samples(plan: str, target: str, now: float) -> list[Sample]:
    """That dr status ran (plan-wide: a status that stopped is seen even when every source is fine)."""
    return [Sample.of("dr_status_last_run_timestamp_seconds", now, plan=plan, target=target)]


def audit_samples(document: dict[str, Any], now: float) -> list[Sample]:
    """`document`: the audit's JSON report (dr.audit.reports_json.to_document)."""
    plan, target = document["plan"]["name"], document["target"]
    everywhere = [f for f in document["findings"] if f.get("scenario") is None]
    samples = [Sample.of("dr_audit_last_run_timestamp_seconds", now, plan=plan, target=target)]
    for scenario in document["scenarios"]:
        name = scenario["name"]
        findings = everywhere + [f for f in document["findings"] if f.get("scenario") == name]
        labels = {"plan": plan, "scenario": name, "target": target}
        samples += _scenario_counts(findings, labels)
    if (document.get("readiness") or {}).get("shown"):  # dr audit --readiness: its own findings only
        readiness = [f for f in document["findings"] if f.get("scenario") == "readiness"]
        samples += _scenario_counts(readiness, {"plan": plan, "scenario": "readiness", "target": target})
    return samples


def _scenario_counts(findings: list[dict[str, Any]], labels: dict[str, str]) -> list[Sample]:
    counts = {s: sum(1 for f in findings if f["severity"] == s) for s in AUDIT_SEVERITIES}
    return [Sample.of("dr_audit_blockers", counts["blocker"], **labels)] + \
        [Sample.of("dr_audit_findings", n, severity=s, **labels) for s, n in counts.items()]


def drill_samples(record: dict[str, Any], now: float) -> list[Sample]:
    """`record`: the drill record dr drill writes and prints (dr.drills.drilling)."""
    # the audit's scenario name (the failed domains, "+"-joined), not the record's sentence, so
    # a drill's series and the audit's of one scenario carry the same label
    labels = {"plan": record["plan"], "scenario": "+".join(record["failed"]), "target": record["target"]}
    rto = record["rto"]
    return [Sample.of("dr_drill_recovered", int(record["result"] == "recovered"), **labels),
            Sample.of("dr_drill_rpo_seconds", record["rpo_seconds"], **labels),
            Sample.of("dr_drill_rto_total_seconds", rto["total_seconds"], **labels),
            Sample.of("dr_drill_last_run_timestamp_seconds", now, **labels)] + \
        [Sample.of("dr_drill_rto_seconds", seconds, phase=phase, **labels) for phase, seconds in rto["phases"].items()]


def training_samples(record: dict[str, Any], now: float) -> list[Sample]:
    """`record`: a training drill's record (dr drill --training, dr.drills.training)."""
    t = record["training"]
    labels = {"plan": record["plan"], "run": t["run"], "world_size": str(t["world_size"]),
              "scenario": "+".join(record["failed"]), "target": record["target"]}
    failures = sum(1 for c in t["checks"] if c["ok"] is False)
    out = [Sample.of("dr_training_drill_recovered", int(record["result"] == "recovered"), **labels),
           Sample.of("dr_training_drill_continuity_failures", failures, **labels),
           Sample.of("dr_training_drill_rto_total_seconds", record["rto"]["total_seconds"], **labels),
           Sample.of("dr_training_drill_last_run_timestamp_seconds", now, **labels)]
    out += [Sample.of("dr_training_drill_rto_seconds", p["seconds"], phase=p["phase"], **labels)
            for p in t["phases"] if p["measured"]]
    if t["rpo"].get("measured"):
        out += [Sample.of("dr_training_drill_rpo_steps", t["rpo"]["steps"], **labels),
                Sample.of("dr_training_drill_rpo_gpu_hours", t["rpo"]["gpu_hours"], **labels)]
    return out


def verify_samples(plan: str, target: str, problems: int, read_data: bool, now: float) -> list[Sample]:
    labels = {"plan": plan, "target": target}
    return [Sample.of("dr_verify_problems", problems, **labels),
            Sample.of("dr_verify_read_data", int(read_data), **labels),
            Sample.of("dr_verify_last_run_timestamp_seconds", now, **labels)]


def prune_samples(plan: str, target: str, report: dict[str, Any], now: float) -> list[Sample]:
    """`report`: dr prune's --json (dr.repository.pruning.PruneReport.to_json)."""
    labels = {"plan": plan, "target": target}
    return [Sample.of("dr_prune_last_success_timestamp_seconds", now, **labels),
            Sample.of("dr_prune_forgotten_snapshots", len(report["forgotten"]), **labels),
            Sample.of("dr_prune_removed_bytes", report["bytes_freed"], **labels)]
