"""Executing a restore plan: level by level, the steps of a level in parallel, each journaled.

Where it sits: dr.restore.restoring hands execute() a decided plan, a journal writer and the
steps an earlier run already finished. For each step, in restore order:
  succeeded earlier  skipped: its journal record says so (a resumed restore never redoes it);
  refused            recorded with the plan's reason, not run;
  held               a step it requires did not succeed in this run or an earlier one;
  otherwise          run: the exporter restores each destination unit and reports an
                     outcome per item, which is how the step is verified (RESTORED means
                     written and checked; an exporter that reports nothing fails the step).
The step's journal record is written the moment the step ends, before anything is reported:
when the process dies, what the journal says is done, is done.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from typing import Callable

from dr.contract import ExportContext, Outcome, OutcomeStatus, RestoreRequest
from dr.contract.registry import Registry
from dr.model.plans import Plan
from dr.planner.planning import RestorePlan
from dr.planner.steps import HELD, REFUSED, Step
from dr.repository.encryption import EncryptionError
from dr.repository.reading import ArtifactReader
from dr.repository.repositories import IntegrityError
from dr.restore.journals import STEP, JournalWriter
from dr.restore.results import ResultStatus, StepResult
from dr.restore.running import restore_opened

Event = Callable[[str, Step, StepResult | None], None]  # ("start" | "end", step, result)


class StepRunner:
    """Runs one step: its exporter's restore() for every destination unit of the step."""

    def __init__(self, plan: Plan, registry: Registry, reader: ArtifactReader, *, overwrite: bool = False,
                 dry_run: bool = False, log: Callable[[str], None] = lambda m: None):
        self.plan, self.registry, self.reader = plan, registry, reader
        self.overwrite, self.dry_run, self.log = overwrite, dry_run, log

    def __call__(self, step: Step) -> StepResult:
        started = time.monotonic()
        outcomes = self._outcomes(step)
        if step.artifacts and not outcomes:
            outcomes.append(Outcome(step.name, OutcomeStatus.FAILED,
                                    f"the exporter reported no outcome for {len(step.artifacts)} artifacts"))
        failed = [o for o in outcomes if o.failed]
        status = ResultStatus.FAILED if failed else ResultStatus.SUCCEEDED
        return StepResult(step.name, status, summarize(outcomes), outcomes, time.monotonic() - started,
                          forced=step.forced)

    def _outcomes(self, step: Step) -> list[Outcome]:
        source = self.plan.source(step.name)
        context = ExportContext(source.name, self.plan.options[source.name], self.plan.base_dir,
                                source.sensitivity, log=lambda m: self.log(f"{source.name}: {m}"))
        outcomes: list[Outcome] = []
        exporter = None
        try:
            exporter = self.registry.get(source.type)(context)
            for unit in step.units:
                request = RestoreRequest(to=unit.to, dry_run=self.dry_run, overwrite=self.overwrite,
                                         remap=dict(unit.remap))
                outcomes.extend(restore_opened(exporter, unit.artifacts, self.reader, request))  # format.md 8.1
        except IntegrityError as exc:
            outcomes.append(Outcome(step.name, OutcomeStatus.FAILED, f"integrity: {self.reader.met(exc)}"))
        except EncryptionError as exc:  # secret content and no identity that opens it
            outcomes.append(Outcome(step.name, OutcomeStatus.FAILED, f"decryption: {exc}"))
        except Exception as exc:  # one step's failure is its outcome, never the end of the restore
            outcomes.append(Outcome(step.name, OutcomeStatus.FAILED, f"{type(exc).__name__}: {exc}"))
        finally:
            close = getattr(exporter, "close", None)
            if callable(close):
                close()
        return outcomes


def summarize(outcomes: list[Outcome]) -> str:
    counts: dict[str, int] = {}
    for outcome in outcomes:
        counts[outcome.status.value] = counts.get(outcome.status.value, 0) + 1
    text = ", ".join(f"{n} {status}" for status, n in sorted(counts.items())) or "nothing to restore"
    failed = [o for o in outcomes if o.failed]
    if failed:
        shown = "; ".join(f"{o.item}: {o.reason}" for o in failed[:3])
        text += f"; failed: {shown}" + (f" (and {len(failed) - 3} more)" if len(failed) > 3 else "")
    return text


def _decided(step: Step, results: dict[str, StepResult], earlier: set[str]) -> StepResult | None:
    """The result of a step that does not run in this run, or None when it must run."""
    if step.name in earlier:
        return StepResult(step.name, ResultStatus.SUCCEEDED, "succeeded in an earlier run of this restore",
                          earlier=True)
    if step.status == REFUSED:
        return StepResult(step.name, ResultStatus.REFUSED, step.reason)
    waiting = sorted(p for p in step.requires if not (p in results and results[p].succeeded))
    if waiting or step.status == HELD:
        states = ", ".join(f"{p} {results[p].status if p in results else 'not run'}" for p in waiting)
        return StepResult(step.name, ResultStatus.HELD, f"not run: it needs what {states or 'its prerequisites'} "
                                                        "restore(s); run the restore again once that succeeds")
    return None


def execute(restore_plan: RestorePlan, run_step: Callable[[Step], StepResult], *, earlier: set[str],
            journal: JournalWriter | None, run: int = 1, parallel: int = 4,
            on_event: Event = lambda kind, step, result: None) -> list[StepResult]:
    """Run every level in turn; return one result per step, in restore order."""
    results: dict[str, StepResult] = {}

    def finish(step: Step, result: StepResult) -> None:
        if journal is not None and not result.earlier:
            fields = {k: v for k, v in result.to_json(journal.seal if step.holds_secrets else None).items() if k != "earlier"}
            journal.put(step.name, {"record": STEP, "run": run, "step_seq": step.seq, **fields})
        results[step.name] = result
        on_event("end", step, result)

    for level in restore_plan.levels():
        to_run = []
        for step in level:
            decided = _decided(step, results, earlier)
            if decided is None:
                to_run.append(step)
            else:
                finish(step, decided)
        if not to_run:
            continue
        def work(step: Step) -> StepResult:
            on_event("start", step, None)
            return run_step(step)

        with ThreadPoolExecutor(max(1, parallel), thread_name_prefix="restore-step") as pool:
            futures = {pool.submit(work, step): step for step in to_run}
            for future in as_completed(futures):
                finish(futures[future], future.result())
    return [results[s.name] for s in restore_plan.steps]
