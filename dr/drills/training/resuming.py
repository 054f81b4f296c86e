"""`dr drill --training RUN`: resume a training run from its DR copy, in another world size, and
measure the RTO of training rather than of "Running" (docs/readiness.md, "Training recovery
drills").

The steps: the plan's `readiness.runs[].resume` for RUN; the newest save of RUN that the
snapshot records (any source whose exporter reports checkpoint saves), and of its DR copies
the first whose place survives the drilled scenario (placed as the plan places any reference;
one in an unknown place is used only when none is known to survive, and the record says so);
that copy restored into the scratch folder, timed; the resume command run there with the
progress protocol's file; its phases and continuity judged (dr.drills.training.judging); a
record appended to the drill history, like every drill's, with a `training` member.
"""

from __future__ import annotations

import fnmatch
import os
import shutil
import socket
import time
from datetime import datetime, timezone
from typing import Any

import pyrage

from dr.audit import choose_audited_target, scenarios_for
from dr.contract import CheckpointSave, ExportContext, RestoreRequest, SaveCopy
from dr.contract.capabilities import overrides
from dr.contract.registry import Registry
from dr.drills.history import write_record
from dr.drills.training.events import ProgressLog, read_log
from dr.drills.training.judging import Check, Judgement, add_estimates, judge, total_seconds
from dr.drills.training.running import Kill, Resumed, failure_noticed, run_resumed
from dr.model.plans import Plan, ResumeSpec, RunCostsSpec, parse_size

from dr.model.recovery.scenarios import Scenario
from dr.repository.catalogs import read_catalog
from dr.repository.drill_records import FORMAT, VERSION
from dr.repository.journals import new_restore_id
from dr.repository.locks import Lock
from dr.repository.records import utc
from dr.repository.targets import open_target
from dr.restore import run_restore
from dr.training.progress import ENV


class TrainingDrillError(Exception):
    """The drill cannot run: the message names the plan field, the run or the copy, and the fix."""


def run_training_drill(plan: Plan, registry: Registry, run: str, *, world_size: int, failed: list[str],
                       scratch: str, steps: int | None = None, snapshot_ref: str = "latest",
                       target_name: str | None = None, identities: list[pyrage.x25519.Identity] | None = None,
                       lock_wait: float = 0.0, kill: Kill | None = None, incomplete: str | None = None
                       ) -> dict[str, Any]:
    """kill: a failure drill (SIGKILL one rank at a step, time the restart chain); incomplete:
    damage the restored copy first ("missing-shard", "truncated-shard"), and the drill passes
    only when the resume command refuses it."""
    costs, spec = resume_spec(plan, run)
    scenario = scenarios_for(plan, failed)[0]
    target = choose_audited_target(plan, [scenario], target_name)
    started = datetime.now(timezone.utc)
    snapshot, source, save = _newest_save(plan, registry, target, run, snapshot_ref, lock_wait)
    copy, survival = choose_copy(plan, scenario, save)
    folder = os.path.abspath(scratch)
    restored, download, outcomes = _restore(plan, registry, source, snapshot.id, copy, save, folder, identities,
                                            target.name)
    resumed = judgement = damage = None
    rpo: dict[str, Any] = {}
    if restored and incomplete:
        damage = damage_copy(restored, incomplete)
        resumed = _resume(plan, spec, run, save, restored, world_size, steps or spec.steps, folder)
    elif restored:
        resumed = _resume(plan, spec, run, save, restored, world_size, steps or spec.steps, folder, kill)
        judgement, rpo = _judged(plan, costs, spec, save, resumed, download, kill)
    record = _record(plan, run, world_size, scenario, target.name, snapshot, save, copy, survival, outcomes,
                     download, resumed, judgement, rpo, started, kill, damage)
    repo = open_target(plan, target)
    repo.open()
    with Lock(repo, exclusive=False, command=f"dr drill --training {run}").acquire(lock_wait):
        record["key"] = write_record(repo, record)
    return record


# -- choosing -------------------------------------------------------------------------------------
def resume_spec(plan: Plan, run: str) -> tuple[RunCostsSpec, ResumeSpec]:
    """The first `readiness.runs` entry matching `run` that says how to resume it."""
    for entry in plan.spec.readiness.runs:
        if fnmatch.fnmatchcase(run, entry.run) and entry.resume is not None:
            return entry, entry.resume
    raise TrainingDrillError(
        f"{plan.path}: readiness.runs has no entry for run {run!r} with `resume` (the command that resumes it); "
        "add one, e.g. `readiness: {runs: [{run: \"" + run + "\", resume: {command: [torchrun, "
        "--nproc-per-node, \"{world_size}\", train.py, --resume, \"{checkpoint}\"]}}]}` (docs/readiness.md)")


def _newest_save(plan: Plan, registry: Registry, target, run: str, snapshot_ref: str,
                 lock_wait: float) -> tuple[Any, str, CheckpointSave]:
    repo = open_target(plan, target)
    repo.open()
    with Lock(repo, exclusive=False, command=f"dr drill --training {run}").acquire(lock_wait):
        snapshot = repo.find_snapshot(snapshot_ref)
        catalog = read_catalog(repo, snapshot.catalog)
    found: list[tuple[str, CheckpointSave]] = []
    runs: set[str] = set()
    for source in plan.spec.sources:
        cls = registry.get(source.type)
        if not overrides(cls, "checkpoint_saves"):
            continue
        exporter = cls(ExportContext(source.name, plan.options[source.name], plan.base_dir, source.sensitivity))
        for save in exporter.checkpoint_saves([a for a in catalog if a.source == source.name]):
            runs.add(save.run)
            if save.run == run:
                found.append((source.name, save))
    if not found:
        raise TrainingDrillError(f"snapshot {snapshot.short_id} records no checkpoint save of run {run!r} "
                                 f"(runs it records: {', '.join(sorted(runs)) or 'none'})")
    source, save = max(found, key=lambda pair: pair[1].step)
    return snapshot, source, save


def choose_copy(plan: Plan, scenario: Scenario, save: CheckpointSave) -> tuple[SaveCopy, str]:
    """The first copy whose place survives `scenario`; (copy, why it was chosen)."""
    if not save.copies or not save.restored_path:
        raise TrainingDrillError(f"run {save.run} step {save.step}: its exporter names no DR copy a drill can "
                                 "restore into a folder (CheckpointSave.copies, restored_path)")
    unknown, lost = [], []
    for copy in save.copies:
        placement = plan.placer.place(copy.where)
        if placement.domain is None:
            unknown.append(copy)
        elif scenario.loses(placement.domain) or placement.location in scenario.lost_locations:
            lost.append(f"{copy.label or copy.where} ({placement.domain})")
        else:
            return copy, f"{copy.label or copy.where} in {placement.domain} survives {scenario.label}"
    if unknown:
        return unknown[0], (f"{unknown[0].label or unknown[0].where}: its place is unknown to the plan, so its "
                            f"survival is not proven; lost: {', '.join(lost) or 'none'}")
    raise TrainingDrillError(f"run {save.run} step {save.step}: every DR copy is lost when {scenario.label}: "
                             f"{', '.join(lost)}; copy it to a tier in a surviving domain")


def _missing(resume: str) -> str:
    return resume if resume and not resume.startswith("resumable") else ""


# -- restoring and resuming -----------------------------------------------------------------------
def _restore(plan: Plan, registry: Registry, source: str, snapshot_id: str, copy: SaveCopy, save: CheckpointSave,
             folder: str, identities, target: str) -> tuple[str | None, float, list[dict]]:
    dest = os.path.join(folder, "checkpoint")
    shutil.rmtree(dest, ignore_errors=True)  # a drill restores into an empty folder
    os.makedirs(dest)
    began = time.monotonic()
    result = run_restore(plan, registry, source, snapshot_id, identities=identities, target_name=target,
                         request=RestoreRequest(to=dest, remap=dict(copy.remap)))
    seconds = time.monotonic() - began
    outcomes = [o.to_json() for o in result.outcomes]
    restored = os.path.join(dest, save.restored_path)
    ok = not result.failed and result.outcomes and os.path.exists(restored)
    return (restored if ok else None), seconds, outcomes


def plan_estimates(plan: Plan) -> dict[str, tuple[float, str]]:
    """The phases a local drill cannot measure, as the plan's restore.rto estimates them."""
    rto = plan.spec.restore.rto
    out: dict[str, tuple[float, str]] = {}
    for phase, part in (("failure_detection", "detection"), ("termination_and_cleanup", "cleanup"),
                        ("requeue_and_scale_up", "requeue")):
        seconds = rto.seconds(part)
        if seconds is not None:
            out[phase] = (seconds, f"the plan's restore.rto.{part} ({getattr(rto, part)}), an estimate")
    if rto.image_bytes is not None and rto.throughput_bytes:
        size = float(parse_size(rto.image_bytes))
        out["image_warmup"] = (size / rto.throughput_bytes, f"the plan's restore.rto.image_bytes ({rto.image_bytes}) "
                                                            f"at its throughput ({rto.throughput}), an estimate")
    return out


def _judged(plan: Plan, costs: RunCostsSpec, spec: ResumeSpec, save: CheckpointSave, resumed: Resumed,
            download: float, kill: Kill | None) -> tuple[Judgement, dict[str, Any]]:
    """A resume drill is judged against the plan's failed_log; a failure drill against its own
    steps before the kill, which the restarted workers repeat."""
    if kill is None:
        oracle = read_log(_in_plan(plan, spec.failed_log)) if spec.failed_log else None
        judgement = judge(checkpoint_step=save.step, started=resumed.started, download_seconds=download,
                          resumed=resumed.log, failed=oracle, tolerance=spec.tolerance,
                          steady_within=spec.steady_within, missing=_missing(save.resume))
        judgement.estimated = add_estimates(judgement.phases, plan_estimates(plan))
        return judgement, _rpo(plan, costs, save, oracle)
    cut = resumed.killed_at or resumed.ended
    events = resumed.log.events
    # the restarted workers' events begin at rank 0's new `started`; a step the old rank 0 still
    # finished after the kill belongs to the old run
    split = next((i for i, e in enumerate(events) if e["event"] == "started" and e["t"] >= cut), len(events))
    before = ProgressLog(resumed.log.path, events[:split], resumed.log.malformed)
    after = ProgressLog(resumed.log.path, events[split:])
    reloaded = after.first("loaded")
    step = reloaded["step"] if reloaded else save.step
    judgement = judge(checkpoint_step=step, started=cut, download_seconds=download, resumed=after, failed=before,
                      tolerance=spec.tolerance, steady_within=spec.steady_within, missing=_missing(save.resume),
                      killed_at=cut, detected_at=failure_noticed(resumed.output, cut))
    judgement.estimated = add_estimates(judgement.phases, plan_estimates(plan))
    lost = [e for e in before.of("step") if e["step"] > step]
    rpo = {"measured": True, "steps": len({e["step"] for e in lost}),
           "seconds": round(max(0.0, cut - lost[0]["t"]) if lost else 0.0, 3),
           "how": f"the steps after the reloaded step {step} that the kill lost (the restarted workers repeat them)"}
    gpus = costs.gpus or plan.spec.readiness.gpus
    rpo.update(gpus=gpus, gpu_hours=round(gpus * rpo["seconds"] / 3600, 4))
    return judgement, rpo


def damage_copy(checkpoint: str, how: str) -> str:
    """Make the restored copy incomplete the way a crashed save leaves one; what was done. The
    largest file stands for a data shard whatever the format (DCP's .distcp, a safetensors file)."""
    files = [os.path.join(d, f) for d, _, names in os.walk(checkpoint) for f in names] \
        if os.path.isdir(checkpoint) else [checkpoint]
    if not files:
        raise TrainingDrillError(f"{checkpoint}: the restored checkpoint holds no file to damage")
    largest = max(files, key=os.path.getsize)
    shown = os.path.relpath(largest, os.path.dirname(checkpoint))
    if how == "missing-shard":
        os.unlink(largest)
        return f"removed {shown}"
    size = os.path.getsize(largest)
    os.truncate(largest, size // 2)
    return f"truncated {shown} from {size} to {size // 2} bytes"


def _resume(plan: Plan, spec: ResumeSpec, run: str, save: CheckpointSave, checkpoint: str, world_size: int,
            steps: int, folder: str, kill: Kill | None = None) -> Resumed:
    values = {"world_size": str(world_size), "checkpoint": checkpoint, "steps": str(steps), "run": run,
              "step": str(save.step)}
    argv = [_fill(arg, values) for arg in spec.command]
    progress = os.path.join(folder, "progress.jsonl")
    if os.path.exists(progress):
        os.unlink(progress)
    env = {**os.environ, **{k: _fill(v, values) for k, v in spec.env.items()}, ENV: progress,
           "DR_RESUME_CHECKPOINT": checkpoint, "DR_WORLD_SIZE": str(world_size), "DR_RESUME_STEP": str(save.step)}
    cwd = _in_plan(plan, spec.workdir) if spec.workdir else folder
    return run_resumed(argv, cwd=cwd, env=env, progress=progress, output=os.path.join(folder, "resume.log"),
                       steps=steps, time_limit=spec.time_limit_seconds, kill=kill)


def _fill(text: str, values: dict[str, str]) -> str:
    for key, value in values.items():
        text = text.replace("{" + key + "}", value)
    return text


def _in_plan(plan: Plan, path: str) -> str:
    return path if os.path.isabs(path) else os.path.join(plan.base_dir, path)


# -- RPO and the record ---------------------------------------------------------------------------
def _rpo(plan: Plan, costs: RunCostsSpec, save: CheckpointSave, failed: ProgressLog | None) -> dict[str, Any]:
    """What the failure lost: from the checkpoint's save to the failed run's last logged step."""
    if failed is None or not failed.of("step"):
        return {"measured": False, "how": "no failed_log: the steps after the checkpoint are unknown"}
    last = failed.of("step")[-1]
    seconds = max(0.0, last["t"] - save.finished)
    gpus = costs.gpus or plan.spec.readiness.gpus
    price = costs.gpu_cost_per_hour if costs.gpu_cost_per_hour is not None else plan.spec.readiness.gpu_cost_per_hour
    out = {"measured": True, "steps": max(0, last["step"] - save.step), "seconds": round(seconds, 3),
           "gpu_hours": round(gpus * seconds / 3600, 4), "gpus": gpus,
           "how": "from the checkpoint's save to the failed run's last logged step"}
    if price is not None:
        out["cost"] = round(gpus * seconds / 3600 * price, 2)
    return out


def _record(plan: Plan, run: str, world_size: int, scenario: Scenario, target: str, snapshot, save: CheckpointSave,
            copy: SaveCopy, survival: str, outcomes: list[dict], download: float, resumed: Resumed | None,
            judgement: Judgement | None, rpo: dict, started: datetime, kill: Kill | None,
            damage: str | None) -> dict[str, Any]:
    phases = [p.to_json() for p in judgement.phases] if judgement else []
    checks = [c.to_json() for c in judgement.checks] if judgement else []
    if damage is not None and resumed is not None:
        checks = [refusal(resumed, damage).to_json()]
    total = None
    if judgement and resumed:
        total = total_seconds(judgement, resumed.killed_at, 0.0) if kill else \
            total_seconds(judgement, resumed.started, download)
    result, summary = _result(resumed, judgement, outcomes, checks)
    training = {"run": run, "world_size": world_size, "checkpoint": {"step": save.step, "where": save.where,
                                                                      "resume": save.resume},
                "copy": {"where": copy.where, "label": copy.label, "why": survival},
                "phases": phases, "checks": checks, "rpo": rpo,
                "rto_with_estimates_seconds": None if total is None or not judgement else
                round(total + judgement.estimated, 3),
                "baseline": None if not judgement or not judgement.baseline else
                {"rate": round(judgement.baseline.value, 6), "unit": judgement.baseline.unit,
                 "how": judgement.baseline.how}}
    if resumed is not None:
        training["process"] = {"stopped": resumed.stopped, "exit_code": resumed.exit_code,
                               "steps_after_load": resumed.steps_after_load, "output": resumed.output,
                               "malformed_progress_lines": resumed.log.malformed}
    if kill is not None:
        training["failure"] = {"rank": kill.rank, "at_step": kill.at_step, "killed": kill.what}
    if damage is not None:
        training["incomplete"] = damage
    return {
        "format": FORMAT, "version": VERSION, "kind": "training", "id": new_restore_id(started), "plan": plan.name,
        "plan_file": plan.path, "host": socket.gethostname(), "started": utc(started), "finished": utc(),
        "failed": list(scenario.failed_domains), "target": target,
        "scenario": f"{scenario.label}; training {run} at world size {world_size}",
        "snapshot": {"id": snapshot.id, "time": snapshot.to_json()["time"]},
        "rpo_seconds": rpo.get("seconds", 0.0) if rpo.get("measured") else 0.0,
        "rto": {"total_seconds": round(total, 3) if total is not None else 0.0,
                "phases": {p["phase"]: p["seconds"] for p in phases if p["measured"]}, "steps": {}},
        "rto_estimate": {}, "audit": {},
        "restore": {"steps": [{"step": f"checkpoint {run} step {save.step}", "seconds": round(download, 3),
                               "status": "failed" if resumed is None else "succeeded",
                               "reason": "; ".join(o["reason"] for o in outcomes), "outcomes": outcomes}]},
        # the continuity checks, as the history reads verify steps (a check not made is not verified)
        "verify": {"steps": [{"step": c["check"], "verified": c["ok"] is True, "reason": c["detail"], **c}
                             for c in checks]},
        "training": training, "result": result, "summary": summary,
    }


def refusal(resumed: Resumed, damage: str) -> Check:
    """An incomplete copy must be refused: the process exits without training a step."""
    trained = resumed.log.of("step")
    if trained:
        return Check("refuses-incomplete", False, f"{damage}, and the resume command trained {len(trained)} "
                                                  "steps from it anyway", "the trainer's completeness check",
                     "resume-accepted-incomplete")
    if resumed.stopped != "exited" or resumed.exit_code == 0:
        return Check("refuses-incomplete", False, f"{damage}; the resume command did not fail "
                                                  f"({resumed.stopped}, exit {resumed.exit_code})",
                     "the trainer's completeness check", "resume-accepted-incomplete")
    return Check("refuses-incomplete", True, f"{damage}; the resume command refused it (exit {resumed.exit_code}, "
                                             "no step trained)")


def _result(resumed: Resumed | None, judgement: Judgement | None, outcomes: list[dict],
            checks: list[dict]) -> tuple[str, str]:
    if resumed is None:
        why = "; ".join(f"{o['item']}: {o['reason']}" for o in outcomes if o["status"] in ("failed", "conflict"))
        return "failed", f"the DR copy was not restored{': ' + why if why else ''}"
    broken = [c for c in checks if c["ok"] is False]
    if broken:
        return "failed", "; ".join(f"{c['check']}: {c['detail']} (what did not come back: {c['state']})"
                                   for c in broken)
    if judgement is None:  # the incomplete-copy drill, passed
        return "recovered", checks[0]["detail"]
    unchecked = sum(1 for c in checks if c["ok"] is None)
    steady = judgement.steady_at is not None
    first = next((c["detail"].rsplit(" ", 1)[-1] for c in checks if c["check"] == "first-step-follows"), "?")
    summary = (f"resumed at step {first}, {sum(1 for c in checks if c['ok'])} continuity checks passed"
               + (f", {unchecked} not checked" if unchecked else "")
               + ("" if steady else "; steady throughput not reached"))
    return ("recovered" if steady else "partial"), summary
