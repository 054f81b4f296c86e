"""Check 3's join (docs/readiness.md): a training run whose measured save does not fit the spot
notice of the job that writes it.

Two sources know half each. A source that lists workloads records, in its backup, a fact (not a
finding: `category: readiness-fact`) naming every workload that can land on spot or preemptible
capacity, with its provider's notice window and its grace period (fact `preemptible_jobs`: a
list of {job: namespace/name, object, providers, notice_seconds, grace_seconds}). A source that
keeps checkpoints measures each save (contract v2 Exporter.checkpoint_saves). The plan links a
run to its job (`readiness.runs[].job`, first matching rule that sets one); without a link, a
workload whose name equals the run's is its job. A preempted job has min(notice, grace) seconds
to save: the kubelet kills it when its grace period ends, the provider takes the node when the
notice does. A run whose median save takes longer is `spot-save-exceeds-notice`.
"""

from __future__ import annotations

import fnmatch
from typing import Any, Mapping

from dr.audit.backup_findings import FACT, READINESS
from dr.audit.checkpoint_advice import recorded_saves
from dr.audit.findings import BLOCKER, WARNING, Finding
from dr.contract import Exporter
from dr.model.checkpoint_intervals import Save, measure
from dr.model.plans import Plan
from dr.model.snapshots import Snapshot
from dr.repository.repositories import Repository

JOBS = "preemptible_jobs"
CODE = "spot-save-exceeds-notice"
ACTION = ("make the save fit the notice: save asynchronously (DCP async_save), save less state at a "
          "preemption, raise terminationGracePeriodSeconds up to the notice, or run the job on on-demand capacity")


def preemptible_jobs(snapshot: Snapshot) -> dict[str, dict[str, Any]]:
    """namespace/name -> the recorded fact (with the recording `source`), over the snapshot's sources."""
    jobs: dict[str, dict[str, Any]] = {}
    for result in snapshot.sources:
        for recorded in result.findings:
            if recorded.get("category") == FACT and isinstance(recorded.get(JOBS), list):
                for job in recorded[JOBS]:
                    if isinstance(job, dict) and isinstance(job.get("job"), str):
                        jobs[job["job"]] = {**job, "source": result.name}
    return jobs


def linked_jobs(plan: Plan, run: str, jobs: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """The spot-capable jobs that write `run`: the plan's link, else those named like the run."""
    rule = next((r for r in plan.spec.readiness.runs if r.job and fnmatch.fnmatchcase(run, r.run)), None)
    if rule is not None:
        return [jobs[rule.job]] if rule.job in jobs else []
    return [job for ref, job in sorted(jobs.items()) if ref.split("/", 1)[1] == run]


def spot_save_findings(plan: Plan, repo: Repository, snapshot: Snapshot,
                       exporters: Mapping[str, Exporter] | None, strict: bool = False) -> list[Finding]:
    jobs = preemptible_jobs(snapshot)
    if not jobs or not exporters:
        return []
    snapshots = repo.snapshots()
    findings = []
    for source, exporter in sorted(exporters.items()):
        recorded = recorded_saves(repo, snapshots, source, exporter)
        if recorded is None:
            continue
        snap, by_run = recorded
        for run, saves in sorted(by_run.items()):
            cost = measure([Save(s.step, s.duration, s.interval, s.previous_step) for s in saves], None).save_cost
            for job in linked_jobs(plan, run, jobs) if cost is not None else []:
                finding = _judge(source, snap, run, cost, job, strict)
                if finding is not None:
                    findings.append(finding)
    return findings


def _judge(source: str, snap: Snapshot, run: str, cost: float, job: dict[str, Any], strict: bool) -> Finding | None:
    notice, grace = int(job.get("notice_seconds") or 0), int(job.get("grace_seconds") or 0)
    window = min(notice, grace)
    if cost <= window:
        return None
    limit = (f"the {'/'.join(job.get('providers') or ['spot'])} notice of {notice} s"
             + (f", cut to its grace period of {grace} s" if grace < notice else ""))
    message = (f"run {run} (source {source}, snapshot {snap.short_id}) takes {cost:.0f} s to save (median of its "
               f"measured saves), but its job {job['object']} can run on spot capacity and has {window} s to "
               f"save when preempted ({limit}): the save in progress at a preemption is lost with the "
               "work since the previous checkpoint")
    finding = Finding("readiness-finding", BLOCKER if strict else WARNING, message, kind=CODE, action=ACTION,
                      reference=f"{job['object']} (run {run})", sources=sorted({source, job["source"]}),
                      # no exporter recorded it: `backup` names what the join judged (the saves' source, the run)
                      backup={"source": source, "code": CODE, "severity": "warning", "object": f"run {run}"})
    finding.scenario = READINESS
    finding.runbook_path = f"runbooks/{CODE}.md"
    return finding
