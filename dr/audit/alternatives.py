"""Any-of needs in the audit: what exporters say is met by any one of several references.

An exporter may declare, through the contract (v2 `restore_needs(artifacts) -> list[AnyOf]`),
needs that any one of several references meets: an image copied to two DR registries, a
checkpoint kept in a near and a far tier, a Vault unsealed by a multi-region KMS key (any
replica region). The audit asks the same exporters the restore planner asks (the caller builds
them from the plan; the audit names none) and judges each need through the verdict engine
(dr.model.recovery.judge_any): met when any reference survives, a blocker only when every one
is lost, naming them all. The dependency kinds of a source's any-of needs are then judged only
that way for that source, as the restore planner does: the same references are taken out of
the one-by-one judging (dr.audit.dependency_findings), with their counts.

Only sources whose exporter overrides restore_needs have their catalog lines kept (as
Artifacts, for the call): the audit's pass stays flat in memory for every other source.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Iterator, Mapping

from dr.audit.gathering import EXAMPLES, DependencyIndex, DependencyUse, Record, artifact_name
from dr.contract.capabilities import overrides
from dr.contract import AnyOf, Exporter
from dr.model.artifacts import Artifact
from dr.model.recovery import AnyJudgement, RecoveryJudge, judge_any


def declares_any_of(exporter: Exporter) -> bool:
    """The exporter's class overrides restore_needs (the default declares none)."""
    return overrides(type(exporter), "restore_needs")


@dataclass(slots=True)
class AnyNeed:
    """One distinct any-of need (kind and references) and who needs it."""

    kind: str
    what: str
    references: tuple[str, ...]
    sources: set[str] = field(default_factory=set)
    count: int = 0  # how many artifacts record one of its references
    examples: list[str] = field(default_factory=list)  # the first of them (source/kind/identity)

    def use(self, reference: str) -> DependencyUse:
        """The need as a DependencyUse of one reference, for counts, graphs and findings."""
        return DependencyUse(self.kind, reference, self.count, set(self.sources), list(self.examples),
                             f"any of {len(self.references)}: {self.what}")


class AnyOfNeeds:
    """Collects the lines of declaring sources while the catalog streams, then asks them."""

    def __init__(self, exporters: Mapping[str, Exporter] | None):
        self.exporters = {name: e for name, e in (exporters or {}).items() if declares_any_of(e)}
        self.lines: dict[str, list[Record]] = {}
        self.needs: list[AnyNeed] = []
        self.problems: list[tuple[str, str]] = []  # (source, what went wrong asking its exporter)

    def record(self, records: Iterable[Record]) -> Iterator[Record]:
        """Pass catalog lines through (to gather), keeping those of declaring sources."""
        for record in records:
            if record["source"] in self.exporters:
                self.lines.setdefault(record["source"], []).append(record)
            yield record

    def resolve(self, index: DependencyIndex) -> list[AnyNeed]:
        """Ask each declaring source's exporter; take its any-of kinds out of index.uses."""
        found: dict[tuple[str, tuple[str, ...]], AnyNeed] = {}
        for source, lines in self.lines.items():
            try:
                declared = self.exporters[source].restore_needs([Artifact.from_json(r) for r in lines])
            except Exception as exc:  # a third-party exporter's bug: reported, never a traceback
                self.problems.append((source, f"{type(exc).__name__}: {exc}"))
                continue
            declared = [n for n in declared if isinstance(n, AnyOf)]
            _withdraw(index, source, lines, {n.kind for n in declared})
            for need in declared:
                item = found.setdefault((need.kind, tuple(need.references)),
                                        AnyNeed(need.kind, need.what, tuple(need.references)))
                item.sources.add(source)
                _count(item, lines)
        self.needs = list(found.values())
        self.lines.clear()  # not needed any more
        return self.needs


def _count(need: AnyNeed, lines: list[Record]) -> None:
    """The artifacts that need it: those whose references of its kind are all among its
    references (an image's DR copies, a checkpoint's copy in one tier), not those that also
    need something else of that kind (another any-of need)."""
    wanted = set(need.references)
    for record in lines:
        refs = {d["reference"] for d in record.get("dependencies", []) if d["kind"] == need.kind}
        if refs and refs <= wanted:
            need.count += 1
            name = artifact_name(record)
            if len(need.examples) < EXAMPLES and name not in need.examples:
                need.examples.append(name)


def _withdraw(index: DependencyIndex, source: str, lines: list[Record], kinds: set[str]) -> None:
    """The source's references of these kinds leave the one-by-one judging (counts exact)."""
    if not kinds:
        return
    counts: dict[tuple[str, str], int] = {}
    for record in lines:
        for dep in record.get("dependencies", []):
            if dep["kind"] in kinds:
                key = (dep["kind"], dep["reference"])
                counts[key] = counts.get(key, 0) + 1
    for key, count in counts.items():
        use = index.uses.get(key)
        if use is None:
            continue
        use.count -= count
        use.sources.discard(source)
        use.examples[:] = [e for e in use.examples if not e.startswith(f"{source}/")]
        if use.count <= 0 or not use.sources:
            del index.uses[key]
    index.references = sum(use.count for use in index.uses.values())


def judge_needs(judge: RecoveryJudge, needs: list[AnyNeed]) -> list[tuple[AnyNeed, AnyJudgement]]:
    return [(need, judge_any(judge, need.references)) for need in needs]


