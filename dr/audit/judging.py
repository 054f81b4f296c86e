"""Judging each distinct dependency against a scenario: ok, remapped, blocker or unknown.

Placement (plan.placer.place) does not depend on the scenario, so it is computed once per
distinct reference and cached; a scenario then only asks whether the placed domain is lost.
The verdict rules are written out in dr.audit's module docstring.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from dr.audit.findings import BLOCKER, INFO, WARNING, Finding, redacted
from dr.audit.gathering import DependencyIndex, DependencyUse, Provider
from dr.audit.scenarios import Scenario
from dr.model.locations import Placement
from dr.model.plans import Plan

OK, REMAPPED, BLOCKED, UNKNOWN = "ok", "remapped", "blocker", "unknown"
VERDICTS = (OK, REMAPPED, BLOCKED, UNKNOWN)

# Dependency kinds with a finding code (and runbook) of their own; others are generic.
_KIND_CODES = {
    "image": "image-in-failed-domain",
    "registry": "registry-in-failed-domain",
    "helm-repo": "registry-in-failed-domain",
    "helm-chart-repo": "registry-in-failed-domain",
    "oci-registry": "registry-in-failed-domain",
    "chart-repo": "registry-in-failed-domain",
    "chart": "registry-in-failed-domain",
    "model-registry": "registry-in-failed-domain",
    "secret-store": "secret-store-in-failed-domain",
    "vault": "secret-store-in-failed-domain",
    "kms": "secret-store-in-failed-domain",
}


def code_for(kind: str) -> str:
    return _KIND_CODES.get(kind, "dependency-in-failed-domain")


class Placements:
    """plan.placer.place, cached by reference (a catalog repeats the same references a lot)."""

    def __init__(self, plan: Plan):
        self._placer = plan.placer
        self._tree = plan.domains
        self._cache: dict[str, Placement] = {}
        self._paths: dict[str, str] = {}

    def place(self, reference: str) -> Placement:
        found = self._cache.get(reference)
        if found is None:
            found = self._cache[reference] = self._placer.place(reference)
        return found

    def path(self, domain: str | None) -> str | None:
        if not domain:
            return None
        found = self._paths.get(domain)
        if found is None:
            found = self._paths[domain] = self._tree.path(domain)
        return found

    @staticmethod
    def how(placement: Placement) -> str | None:
        if placement.location:
            return f"location {placement.location}"
        if placement.rule:
            return f"rule {placement.rule}"
        return None


@dataclass
class Judged:
    use: DependencyUse
    placement: Placement
    verdict: str
    provider: Provider | None = None
    note: str = ""  # why a copy in the snapshot did not count


class DependencyJudge:
    """Verdicts for every distinct dependency of one snapshot, scenario by scenario."""

    def __init__(self, index: DependencyIndex, placements: Placements,
                 copy_is_intact: Callable[[Provider], bool], strict: bool = False):
        self.index = index
        self.placements = placements
        self.strict = strict
        self._copy_is_intact = copy_is_intact
        self._intact: dict[Provider, bool] = {}

    def intact_provider(self, use: DependencyUse) -> tuple[Provider | None, str]:
        """The first provider whose blobs are all present, or None and why not."""
        providers = self.index.providers(use.reference)
        for provider in providers:
            if provider not in self._intact:
                self._intact[provider] = self._copy_is_intact(provider)
            if self._intact[provider]:
                return provider, ""
        if providers:
            return None, (f"the copy in {providers[0].artifact} is missing blobs "
                          "(run dr verify --read-data)")
        return None, ""

    def judge(self, scenario: Scenario, copies_survive: bool) -> list[Judged]:
        out = []
        for use in self.index.uses.values():
            placement = self.placements.place(use.reference)
            lost = scenario.loses(placement.domain)
            if placement.domain is not None and not lost:
                out.append(Judged(use, placement, OK))
                continue
            provider, note = self.intact_provider(use)
            if placement.domain is None:
                # Placed nowhere but brought back by the snapshot itself (a Secret, a ConfigMap,
                # a Service the same snapshot restores): nothing outside is needed.
                out.append(Judged(use, placement, OK if provider else UNKNOWN, provider, note))
                continue
            if provider is not None and not copies_survive:
                provider, note = None, f"the copy in {provider.artifact} is lost with the audited target"
            if provider is not None:
                out.append(Judged(use, placement, REMAPPED, provider))
            else:
                out.append(Judged(use, placement, BLOCKED, None, note))
        return out

    # -- findings ----------------------------------------------------------------------------
    def scenario_findings(self, scenario: Scenario, judged: list[Judged]) -> list[Finding]:
        findings = []
        for item in judged:
            if item.verdict == BLOCKED:
                findings.append(self._finding(item, scenario, code_for(item.use.kind), BLOCKER,
                                              self._blocker_message(item, scenario)))
            elif item.verdict == REMAPPED:
                findings.append(self._finding(item, scenario, "dependency-remapped", INFO,
                                              self._remap_message(item, scenario)))
        return findings

    def unknown_findings(self) -> list[Finding]:
        """References nothing places (the same in every scenario), unless the snapshot holds a copy."""
        findings = []
        for use in self.index.uses.values():
            placement = self.placements.place(use.reference)
            if placement.domain is None and self.intact_provider(use)[0] is None:
                message = (f"nothing in the plan places {use.kind} '{redacted(use.reference)}' "
                           f"(host '{placement.host or '-'}'), so the audit cannot tell whether a "
                           f"restore of {_sources(use)} can still reach it")
                findings.append(self._finding(Judged(use, placement, UNKNOWN), None, "unknown-location",
                                              BLOCKER if self.strict else WARNING, message))
        return findings

    def _finding(self, item: Judged, scenario: Scenario | None, code: str, severity: str,
                 message: str) -> Finding:
        use, placement = item.use, item.placement
        return Finding(code=code, severity=severity, message=message,
                       scenario=scenario.name if scenario else None, kind=use.kind,
                       reference=use.reference, location=self.placements.how(placement),
                       domain=placement.domain, domain_path=self.placements.path(placement.domain),
                       artifact=use.examples[0] if use.examples else None,
                       artifacts_affected=use.count, examples=list(use.examples),
                       sources=sorted(use.sources))

    def _blocker_message(self, item: Judged, scenario: Scenario) -> str:
        use, placement = item.use, item.placement
        why = f"; {item.note}" if item.note else ""
        return (f"{use.kind} '{redacted(use.reference)}' is in {self.placements.path(placement.domain)} "
                f"(by {self.placements.how(placement)}), which is lost when {scenario.label}; "
                f"{use.count} reference(s) from {_sources(use)} need it and no surviving copy exists{why}")

    def _remap_message(self, item: Judged, scenario: Scenario) -> str:
        use, placement = item.use, item.placement
        where = f"is in {self.placements.path(placement.domain)}, lost when {scenario.label}"
        return (f"{use.kind} '{redacted(use.reference)}' {where}, but the snapshot holds a verified copy "
                f"in {item.provider.artifact if item.provider else '?'}: restore it to a new location "
                f"and point {_sources(use)} at it")


def count_verdicts(judged: list[Judged]) -> dict[str, int]:
    counts = dict.fromkeys(VERDICTS, 0)
    for item in judged:
        counts[item.verdict] += 1
    return counts


def _sources(use: DependencyUse) -> str:
    names = sorted(use.sources)
    shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
    return f"source{'s' * (len(names) != 1)} {shown}"
