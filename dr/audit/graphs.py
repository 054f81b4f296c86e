"""The restore's dependency graph as Graphviz DOT, and its rendering to SVG with `dot`.

One graph per scenario: the restore at the root, then the sources, the targets, the key and
dr's image; every dependency drawn inside the failure domains that hold it (nested clusters:
provider > account > region > cluster), lost domains filled red. Blockers are red nodes,
remaps amber with a dashed edge from the surviving copy, unknowns grey and dashed.

A catalog may hold thousands of distinct references; the picture shows every one that is not
ok (up to MAX_PROBLEMS) and a few ok ones per domain, with a "+N more" node for the rest, so
that dot always finishes in seconds.
"""

from __future__ import annotations

import subprocess
from collections import defaultdict
from dataclasses import dataclass, field

from dr.audit.audits import AuditReport, ScenarioResult
from dr.audit.dependency_findings import Judged
from dr.model.domains import DomainTree
from dr.model.recovery import BLOCKED, CREDENTIALS, DR_IMAGE, KEY, OK, REMAPPED, TARGET, UNKNOWN
from dr.model.redaction import redact

OK_PER_DOMAIN = 4
PROBLEMS_PER_DOMAIN = 10  # blockers, remaps and unknowns drawn per domain; "+N more" for the rest
MAX_PROBLEMS = 40
EDGES_PER_DEPENDENCY = 3  # sources drawn pointing at one dependency; the label counts the rest
NOWHERE = "\x00nowhere"  # the pseudo-domain of references nothing places

_STYLE = {
    OK: 'fillcolor="#e8f5e9", color="#66bb6a"',
    REMAPPED: 'fillcolor="#ffca28", color="#ff8f00", penwidth=2',
    BLOCKED: 'fillcolor="#c62828", color="#8e0000", fontcolor="white", penwidth=2',
    UNKNOWN: 'fillcolor="#eeeeee", color="#757575", style="rounded,filled,dashed"',
}
_FAILED = 'style="filled,rounded,bold"; fillcolor="#fdecea"; color="#c62828"; penwidth=3;'
_LOST = 'style="filled,rounded"; fillcolor="#f9d6d2"; color="#c62828";'
_SURVIVING = 'style="rounded"; color="#90a4ae";'
_SHAPES = {TARGET: "cylinder", CREDENTIALS: "note", KEY: "note", DR_IMAGE: "component"}


def _escape(text: object) -> str:
    cleaned = redact(str(text)).replace("\\", "\\\\").replace('"', '\\"')
    return cleaned.replace("\n", " ").replace("\r", " ")


def quote(text: object) -> str:
    """A DOT double-quoted string; backslashes and quotes cannot escape it."""
    return '"' + _escape(text) + '"'


def _short(text: str, width: int = 56) -> str:
    return text if len(text) <= width else text[: width - 1] + "\u2026"


def _label(*lines: str) -> str:
    """A multi-line label: each line escaped, joined by DOT's own line break."""
    return '"' + "\\n".join(_escape(line) for line in lines) + '"'


@dataclass
class _Graph:
    nodes: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))  # domain -> lines
    edges: list[str] = field(default_factory=list)
    loose: list[str] = field(default_factory=list)  # nodes outside every domain
    count: int = 0

    def node(self, domain: str | None, label: str, attrs: str, tooltip: str = "") -> str:
        self.count += 1
        name = f"n{self.count}"
        line = f"{name} [label={label}, {attrs}" + (f", tooltip={quote(tooltip)}" if tooltip else "") + "];"
        (self.nodes[domain] if domain else self.loose).append(line)
        return name

    def edge(self, a: str, b: str, attrs: str = "") -> None:
        self.edges.append(f"{a} -> {b}" + (f" [{attrs}]" if attrs else "") + ";")


def build_dot(report: AuditReport, result: ScenarioResult) -> str:
    graph = _Graph()
    snap = report.snapshot
    root = graph.node(None, _label(f"restore of plan {report.plan}",
                                   f"snapshot {snap.short_id}" if snap else "no snapshot"),
                      'shape=doubleoctagon, fillcolor="#e3f2fd", color="#1565c0"')
    targets = _essentials(graph, report, result, root)
    sources = {name: graph.node(None, _label(f"source {name}"), 'shape=box, fillcolor="#f5f5f5"')
               for name in sorted({s for j in result.judged for s in j.use.sources})}
    for node in sources.values():
        graph.edge(root, node, 'color="#90a4ae"')
    _dependencies(graph, result.judged, sources, targets.get(report.target))
    return _assemble(graph, report.domains, result)


def _essentials(graph: _Graph, report: AuditReport, result: ScenarioResult, root: str) -> dict[str, str]:
    targets: dict[str, str] = {}
    names = {TARGET: "target", CREDENTIALS: "credentials", KEY: "decryption key", DR_IMAGE: "dr image"}
    for item, verdict in result.essentials.verdicts:
        first = names[item.role] + (f" {item.owner or item.name}" if item.role in (TARGET, CREDENTIALS) else "")
        first += " (audited)" if item.role == TARGET and item.name == report.target else ""
        lines = [first, _short(item.reference) if item.reference else "(not declared)"]
        lines += ["BLOCKER"] if verdict == BLOCKED else []
        node = graph.node(item.domain, _label(*lines),
                          f"shape={_SHAPES[item.role]}, {_STYLE[verdict]}", item.reference)
        if item.role == TARGET:
            targets[item.name] = node
            graph.edge(root, node, 'color="#1565c0"')
        elif item.role == CREDENTIALS and item.owner in targets:
            graph.edge(targets[item.owner], node, 'label="reached with", fontsize=8, color="#1565c0"')
        else:
            graph.edge(root, node, 'color="#1565c0"')
    return targets


def _dependencies(graph: _Graph, judged: list[Judged], sources: dict[str, str], audited: str | None) -> None:
    shown: dict[tuple[str, bool], int] = defaultdict(int)  # (domain, ok?) -> nodes drawn
    hidden: dict[tuple[str, str], int] = defaultdict(int)
    problems = 0
    # Problems first, blockers before remaps before unknowns, the most needed first.
    rank = {BLOCKED: 0, REMAPPED: 1, UNKNOWN: 2, OK: 3}
    for item in sorted(judged, key=lambda j: (rank[j.verdict], -j.use.count, j.use.kind, j.use.reference)):
        domain = item.placement.domain or NOWHERE
        ok = item.verdict == OK
        if shown[(domain, ok)] >= (OK_PER_DOMAIN if ok else PROBLEMS_PER_DOMAIN) or \
                (not ok and problems >= MAX_PROBLEMS):
            hidden[(domain, item.verdict)] += 1
            continue
        shown[(domain, ok)] += 1
        problems += not ok
        _dependency(graph, item, domain, sources, audited)
    for (domain, verdict), n in sorted(hidden.items()):
        graph.node(domain, _label(f"+{n} more {verdict}"), f"shape=box, {_STYLE[verdict]}, fontsize=9")


def _dependency(graph: _Graph, item: Judged, domain: str, sources: dict[str, str], audited: str | None) -> None:
    use = item.use
    lines = [f"{use.kind}", _short(use.reference)]
    if item.verdict == REMAPPED and item.provider:
        lines.append("remap: restore from " + _short(item.provider.artifact, 40))
    elif item.verdict == BLOCKED:
        lines.append("BLOCKER")
    needed_by = sorted(use.sources)
    if len(needed_by) > EDGES_PER_DEPENDENCY:
        lines.append(f"needed by {len(needed_by)} sources")
    node = graph.node(domain, _label(*lines), f"shape=box, {_STYLE[item.verdict]}", use.reference)
    color = {BLOCKED: "#c62828", REMAPPED: "#ff8f00"}.get(item.verdict, "#9e9e9e")
    for source in needed_by[:EDGES_PER_DEPENDENCY]:
        graph.edge(sources[source], node, f'color="{color}"')
    if item.verdict == REMAPPED and audited:
        graph.edge(audited, node, 'style=dashed, color="#ff8f00", label="copy", fontsize=8')


def _assemble(graph: _Graph, tree: DomainTree, result: ScenarioResult) -> str:
    lost = result.scenario.lost
    include: set[str] = set()
    for domain in set(graph.nodes) | set(result.scenario.failed_domains):
        if domain != NOWHERE:
            include.update(tree.ancestors(domain))
    children: dict[str | None, list[str]] = defaultdict(list)
    for domain in tree:
        if domain.name in include:
            children[domain.parent if domain.parent in include else None].append(domain.name)
    lines = ["digraph restore {",
             f"  graph [rankdir=LR, fontname=Helvetica, fontsize=12, labelloc=t, "
             f"label={quote('If ' + result.scenario.label + ': what the restore needs')}, nodesep=0.25, newrank=true];",
             '  node [fontname=Helvetica, fontsize=10, style="rounded,filled", shape=box];',
             "  edge [arrowsize=0.6, fontname=Helvetica];"]
    lines += [f"  {n}" for n in graph.loose]
    for root in children[None]:
        lines += _cluster(root, tree, children, graph, lost, result.scenario.failed_domains, "  ")
    if graph.nodes.get(NOWHERE):
        lines += ["  subgraph cluster_nowhere {",
                  '    label="placed nowhere"; style="dashed,rounded"; color="#757575";']
        lines += [f"    {n}" for n in graph.nodes[NOWHERE]] + ["  }"]
    lines += [f"  {e}" for e in graph.edges] + ["}"]
    return "\n".join(lines) + "\n"


def _cluster(name: str, tree: DomainTree, children: dict, graph: _Graph, lost: frozenset[str],
             failed: tuple[str, ...], indent: str) -> list[str]:
    domain = tree.domains[name]
    if name in failed:
        label, style = f"{name} ({domain.kind}): FAILED", _FAILED
    elif name in lost:
        label, style = f"{name} ({domain.kind}): lost with it", _LOST
    else:
        label, style = f"{name} ({domain.kind})", _SURVIVING
    number = list(tree.domains).index(name)
    lines = [f"{indent}subgraph cluster_{number} {{",
             f"{indent}  label={quote(label)}; {style}"]
    nodes = graph.nodes.get(name, [])
    if not nodes and not children.get(name):
        nodes = [f'empty_{number} [label="(nothing the restore needs)", shape=plaintext, style=""];']
    lines += [f"{indent}  {n}" for n in nodes]
    for child in children.get(name, []):
        lines += _cluster(child, tree, children, graph, lost, failed, indent + "  ")
    return lines + [f"{indent}}}"]


def render_svg(dot_source: str, program: str = "dot", timeout: float = 120) -> tuple[str | None, str]:
    """(inline SVG, "") or (None, why not). A missing Graphviz is a reason, never an exception."""
    try:
        done = subprocess.run([program, "-Tsvg"], input=dot_source.encode(), capture_output=True,
                              timeout=timeout, check=False)
    except FileNotFoundError:
        return None, (f"Graphviz's '{program}' program is not installed, so the dependency graph "
                      "cannot be drawn (install it with: apt-get install graphviz). The findings "
                      "below are complete without it.")
    except subprocess.TimeoutExpired:
        return None, f"Graphviz did not finish drawing the graph within {timeout:.0f} s."
    if done.returncode != 0:
        return None, f"Graphviz failed: {done.stderr.decode(errors='replace').strip()[:500]}"
    svg = done.stdout.decode("utf-8", errors="replace")
    start = svg.find("<svg")
    return (svg[start:], "") if start >= 0 else (None, "Graphviz produced no SVG.")
