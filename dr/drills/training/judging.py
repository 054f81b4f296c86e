"""What a resume drill measured and whether the run really continued (docs/readiness.md,
"Training recovery drills": the phases and every check are described there).

Phases are measured from the progress events' wall-clock times (`t`) and the process start;
a phase the drill cannot see locally is listed with `measured: false` and why. Continuity is
judged against the checkpoint's step and, when the plan names the failed run's progress log,
against the failed run itself: it logged the steps between the checkpoint and the failure,
the resumed run repeats them, and their learning rates, sample ids and losses must match
(within `tolerance`, relative). A trainer that loads the weights into a fresh optimizer passes
"the loss is close to the loss at save" and fails the loss check here.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field

from dr.drills.training.events import ProgressLog

WINDOW = 3  # steps in the rolling rate
RUNBOOK = "runbooks/training-resume-failed.md"
NOT_LOCAL = {
    "failure_detection": "no failure happens in a resume drill (the failure drill measures it)",
    "termination_and_cleanup": "no failure happens in a resume drill (the failure drill measures it)",
    "requeue_and_scale_up": "the recovery cluster's scheduler decides it; the drill runs the command here",
    "image_warmup": "the drill runs the command where dr runs, with images already local",
}


@dataclass
class Check:
    name: str
    ok: bool | None  # None: not checked, and `detail` says why
    detail: str
    state: str = ""  # the training state that did not come back, when ok is False
    code: str = ""  # the finding code of a failed check

    def to_json(self) -> dict:
        out = {"check": self.name, "ok": self.ok, "detail": self.detail}
        if self.ok is False:
            out.update(state=self.state, code=self.code, runbook=RUNBOOK)
        return out


@dataclass
class Phase:
    name: str
    seconds: float | None
    measured: bool
    how: str
    estimate: tuple[float, str] | None = None  # (seconds, basis) for a phase not measured

    def to_json(self) -> dict:
        out = {"phase": self.name, "seconds": None if self.seconds is None else round(self.seconds, 3),
               "measured": self.measured, "how": self.how}
        if self.estimate is not None:
            out.update(estimated_seconds=round(self.estimate[0], 3), estimate_basis=self.estimate[1])
        return out


def add_estimates(phases: list[Phase], estimates: dict[str, tuple[float, str]]) -> float:
    """Attach the plan's estimates to the phases not measured; their sum (seconds)."""
    total = 0.0
    for phase in phases:
        if not phase.measured and phase.name in estimates:
            phase.estimate = estimates[phase.name]
            total += phase.estimate[0]
    return total


@dataclass
class Rate:
    value: float
    unit: str  # "samples/s" or "steps/s"
    how: str


@dataclass
class Judgement:
    phases: list[Phase] = field(default_factory=list)
    checks: list[Check] = field(default_factory=list)
    baseline: Rate | None = None
    steady_at: float | None = None  # wall time steady throughput was reached
    estimated: float = 0.0  # seconds the plan estimates for the phases not measured

    @property
    def continuous(self) -> bool:
        return all(c.ok is not False for c in self.checks)


def judge(*, checkpoint_step: int, started: float, download_seconds: float, resumed: ProgressLog,
          failed: ProgressLog | None, tolerance: float, steady_within: float, missing: str = "",
          killed_at: float | None = None, detected_at: float | None = None) -> Judgement:
    """killed_at: a failure drill's SIGKILL; `resumed` then holds the events after it (the
    restarted workers'), `failed` those before it, and the chain is timed from the kill."""
    after = [e for e in resumed.of("step") if e["step"] > checkpoint_step]
    out = Judgement()
    out.baseline = _baseline(failed, after)
    out.steady_at = _steady(after, out.baseline, steady_within)
    out.phases = _phases(started, download_seconds, resumed, after, out, killed_at, detected_at)
    out.checks = _checks(checkpoint_step, resumed, after, failed, tolerance, missing)
    return out


# -- phases ---------------------------------------------------------------------------------------
def _phases(started: float, download: float, log: ProgressLog, after: list[dict], j: Judgement,
            killed_at: float | None, detected_at: float | None = None) -> list[Phase]:
    ready, loaded = log.first("group_ready"), log.first("loaded")
    first = after[0] if after else None
    phases = [Phase("checkpoint_download", download, True, "the restore of the DR copy into the scratch folder")]
    previous = started
    if killed_at is not None:
        restarted = log.first("started")
        if restarted is None:
            phases.append(Phase("failure_detection_and_restart", None, False,
                                "no started event after the kill: the workers were not restarted, or do not "
                                "use the progress protocol"))
        elif detected_at is not None and killed_at <= detected_at <= restarted["t"]:
            phases.append(Phase("failure_detection", detected_at - killed_at, True,
                                "the SIGKILL to the launcher's log line saying the worker failed"))
            phases.append(Phase("termination_and_restart", restarted["t"] - detected_at, True,
                                "to the restarted rank 0's started event (the other workers stopped, new "
                                "ones started)"))
            previous = restarted["t"]
        else:
            phases.append(Phase("failure_detection_and_restart", max(0.0, restarted["t"] - killed_at), True,
                                "the SIGKILL to the restarted rank 0's started event (the launcher's log "
                                "did not say when it noticed, so detection and restart are one phase)"))
            previous = restarted["t"]
    marks = [("process_group_ready", ready, "process start to the group_ready event (rendezvous included)"),
             ("load_and_reshard", loaded, "to the loaded event"),
             ("first_step", first, "to the first step after the load")]
    for name, event, how in marks:
        if event is None:
            phases.append(Phase(name, None, False, f"no {_event_name(name)} event in the progress log"))
            continue
        phases.append(Phase(name, max(0.0, event["t"] - previous), True, how))
        previous = event["t"]
    if j.steady_at is not None and first is not None:
        phases.append(Phase("steady_throughput", j.steady_at - first["t"], True,
                            f"to a rolling rate within the steady margin of {j.baseline.value:.3g} "
                            f"{j.baseline.unit} ({j.baseline.how})"))
    else:
        why = "no baseline rate" if j.baseline is None else "the rate never came within the steady margin"
        phases.append(Phase("steady_throughput", None, False, f"not reached in the steps trained: {why}"))
    skipped = ("failure_detection", "termination_and_cleanup") if killed_at is not None else ()
    phases += [Phase(name, None, False, why) for name, why in NOT_LOCAL.items() if name not in skipped]
    return phases


def _event_name(phase: str) -> str:
    return {"process_group_ready": "group_ready", "load_and_reshard": "loaded", "first_step": "step"}[phase]


def total_seconds(j: Judgement, started: float, download: float) -> float | None:
    """Measured RTO of training: the download plus process start (a failure drill: the kill) to
    steady throughput."""
    return None if j.steady_at is None else download + (j.steady_at - started)


def _rates(steps: list[dict]) -> tuple[list[tuple[float, float]], str]:
    """(time, rate) over each window of WINDOW steps; samples/s when every step says its samples."""
    unit = "samples/s" if steps and all(isinstance(e.get("samples"), int) for e in steps) else "steps/s"
    out = []
    for i in range(WINDOW, len(steps)):
        a, b = steps[i - WINDOW], steps[i]
        seconds = b["t"] - a["t"]
        if seconds <= 0:
            continue
        amount = (b["samples"] - a["samples"]) if unit == "samples/s" else (b["step"] - a["step"])
        out.append((b["t"], amount / seconds))
    return out, unit


def _baseline(failed: ProgressLog | None, after: list[dict]) -> Rate | None:
    if failed is not None:
        rates, unit = _rates(failed.of("step")[-(WINDOW + 20):])
        if rates:
            return Rate(statistics.median(r for _, r in rates), unit, "the failed run's rate before the failure")
    rates, unit = _rates(after)
    if len(rates) >= 2:
        later = [r for _, r in rates[len(rates) // 2:]]
        return Rate(statistics.median(later), unit, "the resumed run's own later steps: no failed_log")
    return None


def _steady(after: list[dict], baseline: Rate | None, within: float) -> float | None:
    if baseline is None:
        return None
    rates, unit = _rates(after)
    if unit != baseline.unit:
        return None
    return next((t for t, rate in rates if rate >= (1 - within) * baseline.value), None)


# -- continuity -----------------------------------------------------------------------------------
def _checks(step: int, log: ProgressLog, after: list[dict], failed: ProgressLog | None, tol: float,
            missing: str) -> list[Check]:
    loaded = log.first("loaded")
    checks = [_loaded_step(step, loaded), _first_step(step, after)]
    oracle = {s: e for s, e in (failed.steps() if failed else {}).items() if s > step}
    common = [e for e in after if e["step"] in oracle]
    checks.append(_compare("lr-continues", common, oracle, "lr", tol, failed, "the LR scheduler state",
                           "resume-lr-discontinuity", missing))
    checks.append(_same_data(common, oracle, failed, missing))
    checks.append(_compare("loss-repeats", common, oracle, "loss", tol, failed,
                           "the optimizer state (or the model's, or the RNG's)", "resume-loss-diverged", missing))
    checks.append(_no_repeat(step, after, failed, missing))
    return checks


def _loaded_step(step: int, loaded: dict | None) -> Check:
    if loaded is None:
        return Check("loaded-step", None, "no loaded event: the trainer does not use the progress protocol")
    if loaded["step"] == step:
        return Check("loaded-step", True, f"loaded step {step}, the checkpoint's")
    return Check("loaded-step", False, f"loaded step {loaded['step']}, but the checkpoint is step {step}",
                 "the training step", "resume-step-mismatch")


def _first_step(step: int, after: list[dict]) -> Check:
    if not after:
        return Check("first-step-follows", False, f"no step after step {step} was logged", "training progress",
                     "resume-no-progress")
    first = after[0]["step"]
    if first == step + 1:
        return Check("first-step-follows", True, f"the first resumed step is {first}")
    return Check("first-step-follows", False, f"the first resumed step is {first}, not {step + 1}",
                 "the training step", "resume-step-mismatch")


def _no_oracle(name: str, failed: ProgressLog | None, common: list[dict]) -> Check | None:
    if failed is None:
        return Check(name, None, "not checked: the plan names no failed_log (the failed run's progress log)")
    if not common:
        return Check(name, None, "not checked: the failed run's log holds none of the resumed steps")
    return None


def _close(a: float, b: float, tol: float) -> bool:
    return abs(a - b) <= tol * max(abs(a), abs(b)) or a == b


def _compare(name: str, common: list[dict], oracle: dict[int, dict], key: str, tol: float,
             failed: ProgressLog | None, state: str, code: str, missing: str) -> Check:
    skipped = _no_oracle(name, failed, common)
    if skipped:
        return skipped
    pairs = [(e, oracle[e["step"]]) for e in common if isinstance(e.get(key), (int, float))
             and isinstance(oracle[e["step"]].get(key), (int, float))]
    if not pairs:
        return Check(name, None, f"not checked: neither log gives {key} for the same steps")
    for resumed, original in pairs:
        if not _close(resumed[key], original[key], tol):
            return Check(name, False, f"step {resumed['step']}: {key} {resumed[key]:.9g} resumed, "
                                      f"{original[key]:.9g} in the failed run{_missing(missing)}", state, code)
    return Check(name, True, f"{key} of {len(pairs)} steps equal to the failed run's (relative tolerance {tol:g})")


def _same_data(common: list[dict], oracle: dict[int, dict], failed: ProgressLog | None, missing: str) -> Check:
    name = "data-order"
    skipped = _no_oracle(name, failed, common)
    if skipped:
        return skipped
    pairs = [(e, oracle[e["step"]]) for e in common if e.get("sample_ids_digest")
             and oracle[e["step"]].get("sample_ids_digest")]
    if not pairs:
        return Check(name, None, "not checked: neither log gives sample ids for the same steps")
    for resumed, original in pairs:
        if resumed["sample_ids_digest"] != original["sample_ids_digest"]:
            return Check(name, False, f"step {resumed['step']} trained other samples than the failed run did"
                                      f"{_missing(missing)}", "the data loader's position (sampler state)",
                         "resume-data-order-changed")
    return Check(name, True, f"the samples of {len(pairs)} steps are the failed run's")


def _no_repeat(step: int, after: list[dict], failed: ProgressLog | None, missing: str) -> Check:
    """No sample id seen twice in one epoch, over the failed run's steps up to the checkpoint
    and the resumed steps after it."""
    before = [e for e in (failed.of("step") if failed else []) if e["step"] <= step]
    seen: dict[tuple, int] = {}
    counted = 0
    for event in before + after:
        ids = event.get("sample_ids")
        if not isinstance(ids, list):
            continue
        counted += 1
        for sample in ids:
            key = (event.get("epoch"), sample)
            if key in seen and seen[key] != event["step"]:
                return Check("no-sample-repeated", False, f"sample {sample} trained at step {seen[key]} and "
                                                          f"again at step {event['step']}{_missing(missing)}",
                             "the data loader's position (sampler state)", "resume-data-order-changed")
            seen[key] = event["step"]
    if not counted:
        return Check("no-sample-repeated", None, "not checked: no step logs its sample ids")
    return Check("no-sample-repeated", True, f"no sample id repeats within an epoch over {counted} steps")


def _missing(missing: str) -> str:
    return f" (the checkpoint's index: {missing})" if missing else ""
