"""One dependency graph across exporters, cut into levels (rules: dr.restore.ordering_rules).

Where it sits: the planner calls order() once every step's needs are judged (the @provider
rule reads them). A step's level is one more than its deepest predecessor's; the steps of a
level run in parallel, and a level starts when the one before it has ended. Steps are
numbered in that order (level, then name), which is also the order a serial restore takes.

A rule never orders a step against itself or against another member of its own `before`
set, but two rules, or provides/depends references, can still form a cycle (a secret store
whose restore needs what a Git step provides). Then the PRECEDES edges among the steps left
are dropped first; if a cycle remains, those steps share one last level and each says so.
"""

from __future__ import annotations

from dr.restore.ordering_rules import PRECEDES, REQUIRES, RULES
from dr.restore.steps import Step, matches

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


def _levels(names: list[str], graph: Edges) -> tuple[dict[str, int], set[str]]:
    """name -> level (one more than its deepest predecessor), and the names left in a cycle."""
    placed: dict[str, int] = {}
    relaxed = False
    while len(placed) < len(names):
        ready = [n for n in names if n not in placed and all(p in placed for p in graph[n])]
        if ready:
            for n in ready:
                placed[n] = max((placed[p] + 1 for p in graph[n]), default=0)
            continue
        left = [n for n in names if n not in placed]
        if not relaxed:  # a cycle: honour only REQUIRES edges among what is left
            for n in left:
                graph[n] = {p: e for p, e in graph[n].items() if p in placed or e[0] != PRECEDES}
            relaxed = True
            continue
        last = max(placed.values(), default=-1) + 1
        placed.update(dict.fromkeys(left, last))
        return placed, set(left)
    return placed, set()


def order(steps: list[Step]) -> list[Step]:
    """Set each step's level, predecessors and required steps; return them in restore order."""
    graph = edges(steps)
    levels, cyclic = _levels(sorted(graph), graph)
    for step in steps:
        step.level = levels[step.name]
        step.after = {p: why for p, (_, why) in graph[step.name].items()}
        step.requires = {p for p, (strength, _) in graph[step.name].items() if strength == REQUIRES}
        if step.name in cyclic:
            step.after["(cycle)"] = ("its dependencies form a cycle with " +
                                     ", ".join(sorted(cyclic - {step.name})) + "; restored together")
    ordered = sorted(steps, key=lambda s: (s.level, s.name))
    for seq, step in enumerate(ordered, start=1):
        step.seq = seq
    return ordered
