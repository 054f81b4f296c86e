"""Needs met by any one of several references: a DR copy in each of two registries, a checkpoint
in a near and a far tier, a KMS key with replicas in other regions.

Exporters declare these (contract v2 `restore_needs`, an AnyOf: a kind, what it is for people,
the references). Each reference is judged by the one-reference rules (dr.model.recovery.judging);
the need takes the best of them:
  ok        some reference is ok (placed in a surviving domain, or placed nowhere but covered);
  remapped  none is ok, but one is covered by the snapshot's own copy (the restore rebuilds it);
  blocker   none is ok or covered and at least one is in a lost domain (all of them are named);
  unknown   none is placed and none is covered (or the need names no reference at all).
The audit (findings per scenario) and restore planning (may this step run?) both judge any-of
needs here, so they agree.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from dr.model.recovery.judging import Judgement, RecoveryJudge
from dr.model.recovery.verdicts import BLOCKED, OK, REMAPPED, UNKNOWN, Verdict


@dataclass(frozen=True)
class AnyJudgement:
    """One any-of need in one scenario: its verdict, the reference that meets it, every reference's."""

    verdict: Verdict
    chosen: str | None  # the reference relied on (ok or remapped); None when none meets the need
    judged: tuple[tuple[str, Judgement], ...]  # every distinct reference, in the declared order

    @property
    def chosen_judgement(self) -> Judgement | None:
        return next((j for ref, j in self.judged if ref == self.chosen), None)

    def with_verdict(self, verdict: Verdict) -> list[str]:
        return [ref for ref, j in self.judged if j.verdict == verdict]


def judge_any(judge: RecoveryJudge, references: Iterable[str]) -> AnyJudgement:
    judged = tuple((ref, judge.judge(ref)) for ref in dict.fromkeys(references))
    for wanted in (OK, REMAPPED):
        found = next((ref for ref, j in judged if j.verdict == wanted), None)
        if found is not None:
            return AnyJudgement(wanted, found, judged)
    lost = any(j.verdict == BLOCKED for _, j in judged)
    return AnyJudgement(BLOCKED if lost else UNKNOWN, None, judged)
