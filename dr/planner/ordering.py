"""One dependency graph across exporters, cut into levels (rules: dr.planner.ordering_rules).

Where it sits: the planner calls order() once every step's needs are judged (the @provider
rule reads them). A step's level is one more than its deepest predecessor's; the steps of a
level run in parallel, and a level starts when the one before it has ended. Steps are
numbered in that order (level, then name), which is also the order a serial restore takes.

A rule never orders a step against itself or against another member of its own `before`
set, but two rules, or provides/depends references, can still form a cycle (a secret store
whose restore needs what a Git step provides). The levels are cut by dr.model.levelling, whose
docstring holds the cycle policy: PRECEDES edges inside a cycle are set aside first; steps
still in a cycle of REQUIRES edges share one level, after every step not waiting for them and
before every step that waits for them, and each says so.
"""

from __future__ import annotations

from dr.model.levelling import cut
from dr.planner.ordering_rules import PRECEDES, REQUIRES, RULES
from dr.planner.steps import Step, matches

Edges = dict[str, dict[str, tuple[str, str]]]  # after -> {before: (strength, why)}


def rules(steps: list[Step]) -> list[tuple[str, str, str, str]]:
    """The core's rules, then each exporter's own (contract v2 Ordering.rules), once each."""
    found = list(RULES)
    for step in steps:
        for rule in step.instance.ordering.rules if step.instance is not None else ():
            entry = (rule.before, rule.after, REQUIRES if rule.requires else PRECEDES, rule.why)
            if entry not in found:
                found.append(entry)
    return found


def edges(steps: list[Step]) -> Edges:
    names = {s.name for s in steps}
    graph: Edges = {s.name: {} for s in steps}
    for before, after, strength, why in rules(steps):
        if before == "@provider":
            for step in steps:
                for need in step.needs:
                    if need.provider in names and need.provider != step.name:
                        edge = (strength if need.relies else PRECEDES, f"{why} ({need.kind} {need.reference})")
                        if graph[step.name].get(need.provider, (PRECEDES,))[0] != REQUIRES:
                            graph[step.name][need.provider] = edge
            continue
        for a in (s for s in steps if matches(before, s)):
            for b in (s for s in steps if matches(after, s) and not matches(before, s)):
                if a.name != b.name:
                    graph[b.name].setdefault(a.name, (strength, why))
    return graph


def _levels(names: list[str], graph: Edges) -> tuple[dict[str, int], dict[str, tuple[str, ...]]]:
    """name -> level, and name -> the cycle it is restored together with (dr.model.levelling).

    PRECEDES edges the levelling set aside are removed from `graph`: the step no longer waits.
    """
    result = cut(names, {n: {p: strength for p, (strength, _) in graph[n].items()} for n in names},
                 loose={PRECEDES})
    for before, after in result.set_aside:
        del graph[after][before]
    return result.level, {n: group for group in result.cycles for n in group}


def order(steps: list[Step]) -> list[Step]:
    """Set each step's level, predecessors and required steps; return them in restore order."""
    graph = edges(steps)
    levels, cycles = _levels(sorted(graph), graph)
    for step in steps:
        step.level = levels[step.name]
        step.after = {p: why for p, (_, why) in graph[step.name].items()}
        step.requires = {p for p, (strength, _) in graph[step.name].items() if strength == REQUIRES}
        if step.name in cycles:
            others = ", ".join(n for n in cycles[step.name] if n != step.name)
            step.after["(cycle)"] = f"its dependencies form a cycle with {others}; restored together"
    ordered = sorted(steps, key=lambda s: (s.level, s.name))
    for seq, step in enumerate(ordered, start=1):
        step.seq = seq
    return ordered
