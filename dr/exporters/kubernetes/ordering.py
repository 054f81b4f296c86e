"""Restore order: a dependency graph between resource types, its rules written as data with reasons.

Each rule says: objects of the types matching `before` are restored before objects of the types
matching `after`, and why. A selector is a qualified resource name (`secrets`,
`clusterqueues.kueue.x-k8s.io`) or a set:
  @custom      types defined by a CRD
  @namespaced  namespaced types
  @workloads   types whose objects carry a pod template (found in the backup, any kind)
  @webhooks    admission webhook configurations
  @policies    ValidatingAdmissionPolicies and their bindings (enforced by the API server itself)
  @config      everything that is neither a workload, a webhook configuration nor a policy
Three strengths of edge: the RULES are firm; references between objects (referencing.py: the
well-known ones as a table, the rest derived from the scan's records) are "reference" edges;
the HINTS ("configuration before workloads") are loose. The types of one backup become the
graph's nodes, each rule adds edges (the stronger kept where two meet), and the graph is cut
into levels by dr.model.levelling (a type's level is one more than its deepest predecessor's).
Cycles: loose edges inside one are set aside first (so a TrainJob, configuration, still comes
after the runtime it names, a workload); reference edges still in a cycle are set aside next,
with a warning naming the cycle; types still in a cycle of firm rules share a level and say
so (levelling's docstring holds that policy). Everything in a level
is restored in parallel; a level starts when the one before it finished. After the level that
holds the CRDs, the restore waits until every restored CRD is Established and served.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable

from dr.exporters.kubernetes.referencing import REFERENCES
from dr.exporters.kubernetes.resources import ResourceType
from dr.model.levelling import cut

Graph = dict[str, dict[str, tuple[str, str]]]  # after -> {before: (strength, why)}
CRDS = "customresourcedefinitions.apiextensions.k8s.io"
CM, KQ, AR = "cert-manager.io", "kueue.x-k8s.io", "admissionregistration.k8s.io"

RULES: list[tuple[str, str, str]] = [
    # (before, after, why)
    (CRDS, "@custom", "a custom resource cannot be created until its CRD is Established and served"),
    ("namespaces", "@namespaced", "a namespaced object needs its namespace"),
    ("storageclasses.storage.k8s.io", "@workloads", "claims and volumeClaimTemplates bind through them"),
    ("storageclasses.storage.k8s.io", "persistentvolumeclaims", "a claim binds through its class"),
    ("priorityclasses.scheduling.k8s.io", "@workloads", "pods naming a missing PriorityClass are rejected"),
    ("runtimeclasses.node.k8s.io", "@workloads", "pods naming a missing RuntimeClass are rejected"),
    ("ingressclasses.networking.k8s.io", "ingresses.networking.k8s.io", "an Ingress's class names its controller"),
    ("clusterroles.rbac.authorization.k8s.io", "clusterrolebindings.rbac.authorization.k8s.io",
     "binding a missing role fails the API server's escalation check"),
    ("clusterroles.rbac.authorization.k8s.io", "rolebindings.rbac.authorization.k8s.io",
     "a RoleBinding may bind a ClusterRole"),
    ("roles.rbac.authorization.k8s.io", "rolebindings.rbac.authorization.k8s.io",
     "binding a missing role fails the API server's escalation check"),
    ("serviceaccounts", "@workloads", "pods naming a missing ServiceAccount are rejected"),
    ("secrets", "serviceaccounts", "imagePullSecrets and token references"),
    ("secrets", "@workloads", "pods mounting a missing Secret do not start"),
    ("configmaps", "@workloads", "pods mounting a missing ConfigMap do not start"),
    ("secrets", "@custom", "operators read credentials their custom resources name"),
    ("configmaps", "@custom", "operators read configuration their custom resources name"),
    ("secrets", f"certificates.{CM}", "cert-manager: a Certificate whose Secret is missing is reissued"),
    (f"issuers.{CM}", f"certificates.{CM}", "a Certificate's issuerRef must resolve, or it is not Ready"),
    (f"clusterissuers.{CM}", f"certificates.{CM}", "a Certificate's issuerRef must resolve, or it is not Ready"),
    (f"topologies.{KQ}", f"resourceflavors.{KQ}", "a ResourceFlavor may name a Topology"),
    (f"resourceflavors.{KQ}", f"clusterqueues.{KQ}", "a ClusterQueue with a missing flavor is inactive "
                                                     "(FlavorNotFound)"),
    (f"admissionchecks.{KQ}", f"clusterqueues.{KQ}", "a ClusterQueue with a missing AdmissionCheck is inactive"),
    (f"provisioningrequestconfigs.{KQ}", f"admissionchecks.{KQ}", "an AdmissionCheck's parameters name it"),
    (f"multikueueconfigs.{KQ}", f"admissionchecks.{KQ}", "an AdmissionCheck's parameters name it"),
    (f"multikueueclusters.{KQ}", f"multikueueconfigs.{KQ}", "a MultiKueueConfig lists its clusters"),
    (f"cohorts.{KQ}", f"clusterqueues.{KQ}", "a ClusterQueue borrows through the Cohort it names"),
    (f"workloadpriorityclasses.{KQ}", "@workloads", "jobs naming a missing WorkloadPriorityClass are rejected"),
    (f"clusterqueues.{KQ}", f"localqueues.{KQ}", "a LocalQueue points at its ClusterQueue"),
    (f"localqueues.{KQ}", "@workloads", "Kueue suspends jobs whose LocalQueue is missing"),
    ("@workloads", "@webhooks", "a webhook whose service is not running yet would reject every "
                                "object restored after it (failurePolicy: Fail)"),
    ("@config", "@webhooks", "a webhook whose service is not running yet would reject every "
                             "object restored after it (failurePolicy: Fail)"),
    ("@config", "@policies", "an admission policy enforced during the restore would refuse the objects "
                             "the source admitted before the policy existed; its params come first"),
    ("@workloads", "@policies", "an admission policy enforced during the restore would refuse the "
                                "objects the source admitted before the policy existed"),
    (f"validatingadmissionpolicies.{AR}", f"validatingadmissionpolicybindings.{AR}",
     "a binding enforces the policy it names (spec.policyName): the policy first, as it was written"),
]
# Orders that help but that a reference outranks (a TrainJob is configuration, its runtime a
# workload): set aside first when they close a cycle (dr.model.levelling's loose edges).
HINTS: list[tuple[str, str, str]] = [
    ("@config", "@workloads", "workloads last: their controllers act the moment they exist"),
]
FIRM, REFERENCE, LOOSE = "firm", "reference", "loose"
_RANK = {LOOSE: 0, REFERENCE: 1, FIRM: 2}
POLICIES = {(AR, "validatingadmissionpolicies"), (AR, "validatingadmissionpolicybindings")}
WEBHOOKS = {("admissionregistration.k8s.io", "validatingwebhookconfigurations"),
            ("admissionregistration.k8s.io", "mutatingwebhookconfigurations")}


@dataclass(frozen=True)
class TypeInfo:
    """What ordering knows about a type in the backup."""

    rtype: ResourceType
    custom: bool = False
    workload: bool = False


@dataclass
class Level:
    number: int
    types: list[TypeInfo]
    after: dict[str, list[str]] = field(default_factory=dict)  # type -> reasons it waits
    warnings: list[str] = field(default_factory=list)  # reference cycles broken among its types


def matches(selector: str, info: TypeInfo) -> bool:
    webhook, policy = info.rtype.key in WEBHOOKS, info.rtype.key in POLICIES
    sets = {"@custom": info.custom, "@namespaced": info.rtype.namespaced, "@workloads": info.workload,
            "@webhooks": webhook, "@policies": policy, "@config": not info.workload and not webhook and not policy}
    return sets[selector] if selector in sets else selector == info.rtype.qualified


def edges(infos: Iterable[TypeInfo], derived: dict[str, dict[str, str]] | None = None) -> Graph:
    """after -> {before: (strength, why)} for every rule that applies between two types of the backup.

    Rules first, then the reference table, then the hints; `derived` (referencing.derived) adds the
    references the scan recorded. Where two apply to one pair, the stronger one is kept.
    """
    infos = list(infos)
    graph: Graph = {i.rtype.qualified: {} for i in infos}
    table = ([(b, a, FIRM, why) for b, a, why in RULES] + [(b, a, REFERENCE, why) for b, a, _, why in REFERENCES]
             + [(b, a, LOOSE, why) for b, a, why in HINTS])
    for before, after, strength, why in table:
        for a in (i for i in infos if matches(before, i)):
            for b in (i for i in infos if matches(after, i)):
                _add(graph, b.rtype.qualified, a.rtype.qualified, strength, why)
    for after, befores in (derived or {}).items():
        for before, why in befores.items():
            if after in graph and before in graph:
                _add(graph, after, before, REFERENCE, why)
    return graph


def _add(graph: Graph, after: str, before: str, strength: str, why: str) -> None:
    old = graph[after].get(before)
    if before != after and (old is None or _RANK[strength] > _RANK[old[0]]):
        graph[after][before] = (strength, why)


def levels(infos: Iterable[TypeInfo], derived: dict[str, dict[str, str]] | None = None) -> list[Level]:
    """The graph cut into levels (dr.model.levelling's cycle policy, after the breaking below)."""
    by_name = {i.rtype.qualified: i for i in infos}
    graph = edges(by_name.values(), derived)
    result = cut(by_name, _strengths(graph), loose={LOOSE})
    warnings = _break_reference_cycles(result.cycles, graph)
    if warnings:
        result = cut(by_name, _strengths(graph), loose={LOOSE})
    for before, after in result.set_aside:
        del graph[after][before]
    out = []
    for number, names in enumerate(result.levels()):
        after = {n: _cycle_note(n, result.cycle_of(n)) + [f"after {p}: {why}" for p, (_, why) in
                                                          sorted(graph[n].items())] for n in names}
        out.append(Level(number, [by_name[n] for n in names], after,
                         [w for first, w in warnings if first in names]))
    return out


def _strengths(graph: Graph) -> dict[str, dict[str, str]]:
    return {n: {p: strength for p, (strength, _) in befores.items()} for n, befores in graph.items()}


def _break_reference_cycles(cycles: list[tuple[str, ...]], graph: Graph) -> list[tuple[str, str]]:
    """Set aside the reference edges inside each cycle; (first member, warning naming the cycle) each."""
    warnings = []
    for group in cycles:
        dropped = [(p, n, why) for n in group for p, (strength, why) in sorted(graph[n].items())
                   if p in group and strength == REFERENCE]
        for before, after, _ in dropped:
            del graph[after][before]
        if dropped:
            shown = "; ".join(f"{after} after {before} ({why})" for before, after, why in dropped)
            warnings.append((group[0], f"warning: restore order: the references between {', '.join(group)} "
                                       f"form a cycle ({shown}); that order is set aside, and a create an "
                                       "admission webhook refuses is tried again after the rest of its level"))
    return warnings


def _cycle_note(name: str, group: tuple[str, ...]) -> list[str]:
    others = ", ".join(n for n in group if n != name)
    return [f"restored together with {others}: the ordering rules form a cycle between them"] if group else []
