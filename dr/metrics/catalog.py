"""Every metric dr exports: its name, help and labels (docs/metrics.md lists the same; a test
keeps them equal, and checks that the alert rules and the dashboard use no other name).

All are gauges: each describes the last run of a command, not a count over the process's life
(dr runs once and exits). Timestamps are Unix seconds.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Metric:
    name: str
    command: str
    labels: tuple[str, ...]
    help: str


_SOURCE = ("plan", "source", "target")
_RUN = ("plan", "source", "target")  # source: the run's sources, comma-joined
_SCENARIO = ("plan", "scenario", "target")
_TRAINING = ("plan", "run", "world_size", "scenario", "target")  # dr drill --training

_ALL = [
    # dr backup, one series per source and target
    Metric("dr_backup_success", "backup", _SOURCE,
           "1 when the source's last backup succeeded, 0 when it failed or captured less than it should"),
    Metric("dr_backup_last_success_timestamp_seconds", "backup", _SOURCE,
           "when the source last backed up successfully to the target"),
    Metric("dr_backup_last_failure_timestamp_seconds", "backup", _SOURCE,
           "when the source's backup to the target last failed"),
    Metric("dr_backup_artifacts", "backup", _SOURCE, "objects (artifacts) the source's last backup holds"),
    Metric("dr_backup_source_bytes", "backup", _SOURCE, "plaintext bytes of those artifacts"),
    Metric("dr_backup_findings", "backup", _SOURCE + ("severity",),
           "problems the source's exporter noticed in the last backup, by severity"),
    Metric("dr_backup_schedule_interval_seconds", "backup", ("plan", "source"),
           "the longest gap between two runs of the source's cron schedule"),
    # dr backup, one series per run and target
    Metric("dr_backup_duration_seconds", "backup", _RUN, "wall time of the last backup run to the target"),
    Metric("dr_backup_read_bytes", "backup", _RUN, "bytes read from the sources (content not reused)"),
    Metric("dr_backup_uploaded_bytes", "backup", _RUN, "bytes uploaded to the repository (new blobs)"),
    Metric("dr_backup_reused_bytes", "backup", _RUN,
           "bytes of unchanged artifacts reused from the previous snapshot without reading them"),
    Metric("dr_backup_transferred_bytes", "backup", _RUN,
           "bytes exporters copied to DR storage outside the repository (checkpoint DR copies)"),
    Metric("dr_backup_uploaded_blobs", "backup", _RUN, "new blobs uploaded, the catalog included"),
    Metric("dr_backup_reused_artifacts", "backup", _RUN, "artifacts reused unchanged from the previous snapshot"),
    # dr status
    Metric("dr_rpo_age_seconds", "status", _SOURCE,
           "age of the newest good backup of the source: failed runs do not count "
           "(absent when it has none)"),
    Metric("dr_rpo_objective_seconds", "status", ("plan", "source"), "the source's rpo objective"),
    Metric("dr_rto_objective_seconds", "status", ("plan", "source"), "the source's rto objective"),
    Metric("dr_rpo_breach", "status", _SOURCE, "1 when the source's newest good backup is older than its rpo"),
    Metric("dr_rpo_copy_breach", "status", ("plan", "source", "target", "subject"),
           "1 when a copy an exporter keeps outside the repository (a training run's DR checkpoint) "
           "breaches the rpo or is damaged"),
    Metric("dr_status_problems", "status", ("plan", "target"),
           "damaged objects dr status met reading the repository (its config, a source's newest good "
           "backup's catalog): a restore would refuse them"),
    Metric("dr_status_last_run_timestamp_seconds", "status", ("plan", "target"),
           "when dr status last judged the RPO (the alerts' staleness check: status stopped)"),
    # dr audit
    Metric("dr_audit_blockers", "audit", _SCENARIO,
           "blockers in the scenario, those that hold in every scenario included"),
    Metric("dr_audit_findings", "audit", _SCENARIO + ("severity",),
           "findings in the scenario by severity, those that hold in every scenario included"),
    Metric("dr_audit_last_run_timestamp_seconds", "audit", ("plan", "target"), "when the audit ran"),
    # dr drill
    Metric("dr_drill_recovered", "drill", _SCENARIO, "1 when every step was restored and verified"),
    Metric("dr_drill_rpo_seconds", "drill", _SCENARIO, "measured RPO: the age of the data restored"),
    Metric("dr_drill_rto_seconds", "drill", _SCENARIO + ("phase",), "measured RTO of each phase"),
    Metric("dr_drill_rto_total_seconds", "drill", _SCENARIO, "measured RTO, every phase together"),
    Metric("dr_drill_last_run_timestamp_seconds", "drill", _SCENARIO, "when the drill ended"),
    # dr drill --training: the RTO of training, a series of its own (not the restore drill's)
    Metric("dr_training_drill_recovered", "drill", _TRAINING,
           "1 when the run continued (every continuity check made passed) and reached steady throughput"),
    Metric("dr_training_drill_continuity_failures", "drill", _TRAINING, "continuity checks that failed"),
    Metric("dr_training_drill_rto_seconds", "drill", _TRAINING + ("phase",), "measured RTO of training, each phase"),
    Metric("dr_training_drill_rto_total_seconds", "drill", _TRAINING,
           "measured RTO of training: download (a failure drill: the kill) to steady throughput; 0 when not reached"),
    Metric("dr_training_drill_rpo_steps", "drill", _TRAINING, "training steps the failure lost (when measured)"),
    Metric("dr_training_drill_rpo_gpu_hours", "drill", _TRAINING, "GPU-hours the failure lost (when measured)"),
    Metric("dr_training_drill_last_run_timestamp_seconds", "drill", _TRAINING, "when the training drill ended"),
    # dr verify
    Metric("dr_verify_problems", "verify", ("plan", "target"),
           "problems dr verify found: snapshots, artifacts, blobs and copies outside the repository"),
    Metric("dr_verify_read_data", "verify", ("plan", "target"), "1 when every byte was read and hashed"),
    Metric("dr_verify_last_run_timestamp_seconds", "verify", ("plan", "target"), "when dr verify ran"),
    # dr prune
    Metric("dr_prune_last_success_timestamp_seconds", "prune", ("plan", "target"),
           "when dr prune last applied the retention and swept unreferenced blobs"),
    Metric("dr_prune_forgotten_snapshots", "prune", ("plan", "target"), "snapshots the last prune forgot"),
    Metric("dr_prune_removed_bytes", "prune", ("plan", "target"), "bytes of unreferenced blobs the last prune removed"),
]

METRICS: dict[str, Metric] = {m.name: m for m in _ALL}
