"""Judging what each step needs in the failure scenario: ok, remapped, blocker or unknown.

Where it sits: the planner calls judge_step() for every step. The verdict rules are
dr.model.recovery's (the same as the audit's); on top of them the restore knows what each
step's exporter declares (contract v2):
  * the plan's remaps: a dependency the restore rewrites (an image moved to a surviving
    registry) is judged at its new place, and is `remapped` when that place survives;
  * destinations: a step writes somewhere. Where an artifact came from (the exporter's
    origin_kinds: a Git remote, a checkpoint's bucket) is not read during the restore, it is
    written to, so it is judged as the step's destination; a destination in a lost domain is
    a blocker. A unit with no `to` writes back where its artifacts came from (unless its
    Destination says writes_origin=False): its origin-kind dependencies are then judged by the
    very rules the audit applies to them, so the plan and the audit give one answer;
  * any-of needs (restore_needs): met when one of several references survives (a checkpoint's
    DR copies in several tiers: the exporter falls back from a lost tier to the next). Their
    dependency kinds are judged only that way;
  * circular essentials (dr.model.recovery.circular, the audit's `credentials-circular`): the
    credentials or key kept only inside the snapshot they open. In a scenario that loses
    anything, each is a blocker need of every step (its encrypted ones, for the key), and the
    Secret that holds it is a blocker wherever a step needs it, not "the snapshot restores it".
"""

from __future__ import annotations

import re
from typing import Callable, Iterable

from dr.contract import AnyOf
from dr.model.artifacts import Artifact
from dr.model.plans import Plan, TargetSpec
from dr.model.recovery import (BLOCKED, CREDENTIALS, FACT_KINDS, KEY, OK, REMAPPED, TARGET, UNKNOWN, Essential,
                               EssentialVerdicts, Judgement, RecoveryJudge, Scenario, copies_of, judge_any, normalize)
from dr.model.recovery.circular import Circular, circular, dr_workloads
from dr.planner.remaps import rewrite
from dr.planner.steps import Need, Step
from dr.repository.names import ProvidedCopies, is_sealed, plan_name_key
from dr.repository.writing import RECIPIENTS_KEY, recipients_fingerprint


def remap_kinds_for(step: Step, kind: str, reference: str) -> list[str]:
    """The remap kinds the step's exporter declares (contract v2) that could rewrite this
    reference: the kind lists the dependency kind, and its rewrite changes the reference for
    some `old` (the whole reference or one of its parts). A namespace remap rewrites
    `secretstore:<ns>/<name>`, never a Vault URL, though both are secret-store dependencies."""
    declared = step.instance.remap_kinds if step.instance is not None else ()
    olds = {reference, *filter(None, re.split(r"[/:.@]+", reference))}
    return [k.name for k in declared
            if kind in k.rewrites and any(k.rewrite(reference, old, "\x00new") is not None for old in olds)]


class NeedJudge:
    """Needs of steps in one scenario; `label` says what failed, for reasons people read."""

    def __init__(self, plan: Plan, judge: RecoveryJudge, label: str, circles: Iterable[Circular] = ()):
        self.plan, self.judge, self.label = plan, judge, label
        self.circles = {normalize(ref): c for c in circles for ref in c.references}

    def where(self, j: Judgement) -> str:
        placement = j.placement
        how = f"location {placement.location}" if placement.location else f"rule {placement.rule}"
        return f"{self.plan.domains.path(placement.domain)} (by {how})"

    def judge_step(self, step: Step) -> list[Need]:
        any_of = step.instance.restore_needs(step.artifacts) if step.instance is not None else []
        skip = (step.instance.origin_kinds if step.instance is not None else frozenset()) | \
            {need.kind for need in any_of}
        needs = [self._need(step, kind, ref, count)
                 for (kind, ref), count in _distinct(step.artifacts, lambda kind: kind not in skip).items()]
        needs += [self._any_of(need) for need in any_of]
        needs += self._destinations(step)
        needs += self._origins(step)
        return needs

    def provider(self, reference: str) -> str | None:
        """The source whose artifacts provide this reference (restored first even when not relied on)."""
        found = self.judge.copies.get(normalize(reference))
        return found[0].source if found else None

    def _need(self, step: Step, kind: str, reference: str, count: int) -> Need:
        circle = self.circles.get(normalize(reference))
        if circle is not None:
            return Need(kind, reference, BLOCKED, _circular_reason(circle, self.label), self.provider(reference), count)
        j = self.judge.judge(reference)
        if j.verdict in (OK, REMAPPED):
            provider = j.copy.source if j.copy else self.provider(reference)
            return Need(kind, reference, j.verdict, self._covered(step, j), provider, count, relies=bool(j.copy))
        found = rewrite(self.plan.spec.restore.remaps, step.name, step.instance, kind, reference)
        if found is None:
            return Need(kind, reference, j.verdict, self._uncovered(j, remap_kinds_for(step, kind, reference)),
                        self.provider(reference), count)
        k = self.judge.judge(found.new)
        if k.verdict == OK and k.placement.domain is not None:
            return Need(kind, reference, REMAPPED, f"{found.describe()}; the new place is in "
                        f"{self.where(k)}, which survives", None, count)
        if k.verdict in (OK, REMAPPED):
            return Need(kind, reference, REMAPPED, f"{found.describe()}; the snapshot restores it",
                        k.copy.source if k.copy else None, count, relies=bool(k.copy))
        if k.verdict == UNKNOWN:
            return Need(kind, reference, UNKNOWN, f"{found.describe()}; nothing in the plan places "
                        f"{found.new}, so nobody can tell whether it survives", None, count)
        return Need(kind, reference, BLOCKED, f"{found.describe()}, but the new place is in "
                    f"{self.where(k)} too, which is lost when {self.label}", None, count)

    def _covered(self, step: Step, j: Judgement) -> str:
        if j.verdict == OK and j.placement.domain is not None:
            return f"in {self.where(j)}, which survives"
        by = "this step restores it" if j.copy and j.copy.source == step.name else \
            f"step {j.copy.source if j.copy else '?'} restores it first"
        if j.verdict == OK:
            return f"placed nowhere, but the snapshot holds it ({j.copy.artifact if j.copy else '?'}): {by}"
        note = f" ({j.note})" if j.note else ""
        return (f"in {self.where(j)}, which is lost when {self.label}; the snapshot's copy in "
                f"{j.copy.artifact if j.copy else '?'} is rebuilt{note}: {by}")

    def _uncovered(self, j: Judgement, remap_kinds: list[str]) -> str:
        sealed = _unmatchable(self.judge.copies)
        if j.verdict == UNKNOWN:
            return (f"nothing in the plan places it (host '{j.placement.host or '-'}'), so nobody can tell "
                    f"whether it survives: add a location or placement rule{sealed}")
        note = (f"; {j.note}" if j.note else "") + sealed
        lost = f"in {self.where(j)}, which is lost when {self.label}, and no surviving copy exists{note}: "
        if remap_kinds:  # only kinds this step's exporter declares: the plan schema accepts them
            return lost + (f"copy it out of the failed domain and declare a remap of kind "
                           f"{' or '.join(remap_kinds)} (restore.remaps), or --force")
        return lost + ("replicate it outside the failed domain (or back it up as a source of the plan), "
                       "or --force; no remap applies to it")

    def _destinations(self, step: Step) -> list[Need]:
        """Where each unit writes: its `to`, or (without one) the references its Destination says
        it writes to; one the plan does not place is where the restore runs (a local folder, a
        context name), not judged."""
        needs = []
        for unit in step.units:
            places = [unit.to] if unit.to else list(unit.writes_to) if unit.writes_origin else []
            for place in places:
                need = self._destination(step, place, unit.how)
                if need is not None:
                    needs.append(need)
        return needs

    def _destination(self, step: Step, place: str, how: str) -> Need | None:
        j = self.judge.judge(place)
        if j.placement.domain is None and not place.endswith("/"):
            # a folder the step writes into is where what it holds is placed: a location
            # with the prefix "<dir>/" holds "<dir>" as a destination too
            j = self.judge.judge(place + "/")
        if j.placement.domain is None:
            return None
        if self.judge.loses(j.placement):
            return Need("destination", place, BLOCKED, f"the step would write to {self.where(j)}, which is lost "
                        f"when {self.label} (destination from {how}): give --to {step.name}=DEST or a remap")
        return Need("destination", place, OK, f"writes to {self.where(j)}, which survives")

    def _origins(self, step: Step) -> list[Need]:
        """Where units without a `to` write: back where their artifacts came from."""
        kinds = step.instance.origin_kinds if step.instance is not None else frozenset()
        in_place = [u for u in step.units if u.to is None and u.writes_origin]
        found = _distinct([a for u in in_place for a in u.artifacts], lambda kind: kind in kinds)
        return [_in_place(step, self._need(step, kind, ref, count)) for (kind, ref), count in found.items()]

    def _any_of(self, need: AnyOf) -> Need:
        """Met when any one reference survives (the verdict engine's judge_any); a blocker when
        none does and one is lost, naming every reference."""
        found = judge_any(self.judge, need.references)
        total = len(found.judged)
        if found.verdict == OK:
            j = found.chosen_judgement
            where = self.where(j) if j.placement.domain else found.chosen
            return Need(need.kind, found.chosen, OK, f"the {need.what} in {where} survives "
                        f"({len(found.with_verdict(OK))} of {total})")
        if found.verdict == REMAPPED:
            j = found.chosen_judgement
            return Need(need.kind, found.chosen, REMAPPED, f"every {need.what} is in a lost domain, but the "
                        f"snapshot's copy in {j.copy.artifact if j.copy else '?'} rebuilds {found.chosen}",
                        j.copy.source if j.copy else None, relies=bool(j.copy))
        if not found.judged:
            return Need(need.kind, need.what, UNKNOWN, f"the snapshot records no place of the {need.what}")
        named = "; ".join(f"{ref} ({self.where(j) if j.placement.domain else 'placed nowhere'})"
                          for ref, j in found.judged)
        reason = (f"every {need.what} is lost when {self.label}: {named}" if found.verdict == BLOCKED
                  else f"nothing in the plan places the {need.what}: {named}")
        return Need(need.kind, found.judged[0][0], found.verdict, reason)


def _in_place(step: Step, need: Need) -> Need:
    """An origin judged as where the step writes: a blocker says so, and that --to avoids it."""
    if need.verdict == BLOCKED:
        need.reason = (f"the step restores in place, where its artifacts came from (no --to): {need.reason}; "
                       f"or give --to {step.name}=DEST")
    return need


def _distinct(artifacts: Iterable[Artifact], judged: Callable[[str], bool]) -> dict[tuple[str, str], int]:
    """(kind, reference) -> how many artifacts need it, for the kinds judged this way."""
    found: dict[tuple[str, str], int] = {}
    for artifact in artifacts:  # a Service's facts qualify its copy (dr.model.recovery.services)
        for dep in {(d.kind, d.reference) for d in artifact.dependencies
                    if d.kind not in FACT_KINDS and judged(d.kind)}:
            found[dep] = found.get(dep, 0) + 1
    return found


def held_copies(plan: Plan, artifacts: Iterable[Artifact]) -> ProvidedCopies:
    """normalize(reference) -> the artifacts that provide it. Planned without the identity, a
    secret artifact's line is sealed and provides keyed references: matched with the plan's name
    key (format.md 8.1), a Deployment's Secret is found in its sealed batch, not called missing."""
    artifacts = list(artifacts)
    copies = ProvidedCopies(plan_name_key(plan.spec.encryption.recipients), copies_of(artifacts))
    today = recipients_fingerprint(plan.spec.encryption.recipients)  # the key of other recipients differs
    copies.unmatchable = sum(is_sealed(a) and a.meta.get(RECIPIENTS_KEY) != today for a in artifacts)
    return copies


def _unmatchable(copies) -> str:
    """What a verdict of 'no copy' cannot know: sealed lines whose keyed provides no key of this plan
    matches (written to other recipients), which only the identity opens."""
    count = getattr(copies, "unmatchable", 0)
    return (f"; sealed: {count} line(s) of the snapshot, written to other recipients, cannot be matched "
            "without --identity (docs/format.md 8.1)") if count else ""


def circular_essentials(plan: Plan, items: list[Essential], target: TargetSpec, failure: Scenario,
                        artifacts: list[Artifact]) -> list[Circular]:
    """The target's credentials and the key that only the snapshot holds, when the scenario loses
    anything (restoring where nothing failed, they are still where they live now)."""
    if not failure.lost and not failure.lost_locations:
        return []
    copies = held_copies(plan, artifacts)
    return circular(items, target.name, lambda ref: copies.get(normalize(ref), []),
                    dr_workloads(artifacts, plan.spec.dr_image))


def _circular_reason(circle: Circular, label: str) -> str:
    return f"{circle.message} (credentials-circular; {label})"


def precondition_needs(plan: Plan, essentials: EssentialVerdicts, target: TargetSpec, label: str,
                       circles: Iterable[Circular] = ()) -> list[Need]:
    """What every step needs: the snapshot's target and the credentials that reach it.

    essentials: the verdict engine's judgement of the plan's essentials in this scenario (the
    audit's too); a restore needs only its own target's, and only a lost one refuses steps.
    circles: the credentials only the snapshot holds (circular_essentials).
    """
    needs = []
    for item in essentials.blocked(TARGET, target.name):
        needs.append(Need("target", target.name, BLOCKED, f"the snapshot is read from target {target.name} "
                          f"in {plan.domains.path(item.domain)}, which is lost when {label}"))
    for item in essentials.blocked(CREDENTIALS, target.name):
        needs.append(Need("credentials", item.reference, BLOCKED,
                          f"the credentials for target {target.name} are kept in "
                          f"{plan.domains.path(item.domain)}, which is lost when {label}"))
    needs += [Need(CREDENTIALS, c.reference, BLOCKED, _circular_reason(c, label)) for c in circles
              if c.item.role == CREDENTIALS]
    return needs


def key_need(plan: Plan, essentials: EssentialVerdicts, label: str, circles: Iterable[Circular] = ()) -> Need | None:
    """Steps with encrypted artifacts need the private key: is where it is kept lost, or only
    inside the snapshot?"""
    for circle in circles:
        if circle.item.role == KEY:
            return Need(KEY, circle.reference, BLOCKED, _circular_reason(circle, label))
    for item in essentials.blocked(KEY):
        return Need("key", item.reference, BLOCKED, f"the private key that decrypts secret content is kept in "
                    f"{plan.domains.path(item.domain)}, which is lost when {label}")
    return None
