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
The types of one backup become the graph's nodes, each rule adds edges, and the graph is cut
into levels by dr.model.levelling (a type's level is one more than its deepest predecessor's;
its docstring holds the cycle policy, which no rule set here triggers). Everything in a level
is restored in parallel; a level starts when the one before it finished. After the level that
holds the CRDs, the restore waits until every restored CRD is Established and served.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable

from dr.exporters.kubernetes.resources import ResourceType
from dr.model.levelling import cut

CRDS = "customresourcedefinitions.apiextensions.k8s.io"
CM, KQ, AR = "cert-manager.io", "kueue.x-k8s.io", "admissionregistration.k8s.io"

RULES: list[tuple[str, str, str]] = [
    # (before, after, why)
    (CRDS, "@custom", "a custom resource cannot be created until its CRD is Established and served"),
    ("namespaces", "@namespaced", "a namespaced object needs its namespace"),
    ("storageclasses.storage.k8s.io", "@workloads", "claims and volumeClaimTemplates bind through them"),
    ("storageclasses.storage.k8s.io", "persistentvolumeclaims", "a claim binds through its class"),
    ("priorityclasses.scheduling.k8s.io", "@workloads", "pods naming a missing PriorityClass are rejected"),
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
    ("@config", "@workloads", "workloads last: their controllers act the moment they exist"),
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


def matches(selector: str, info: TypeInfo) -> bool:
    webhook, policy = info.rtype.key in WEBHOOKS, info.rtype.key in POLICIES
    sets = {"@custom": info.custom, "@namespaced": info.rtype.namespaced, "@workloads": info.workload,
            "@webhooks": webhook, "@policies": policy, "@config": not info.workload and not webhook and not policy}
    return sets[selector] if selector in sets else selector == info.rtype.qualified


def edges(infos: Iterable[TypeInfo]) -> dict[str, dict[str, str]]:
    """after -> {before: why} for every rule that applies between two types of the backup."""
    infos = list(infos)
    graph: dict[str, dict[str, str]] = {i.rtype.qualified: {} for i in infos}
    for before, after, why in RULES:
        for a in (i for i in infos if matches(before, i)):
            for b in (i for i in infos if matches(after, i)):
                if a.rtype.qualified != b.rtype.qualified:
                    graph[b.rtype.qualified].setdefault(a.rtype.qualified, why)
    return graph


def levels(infos: Iterable[TypeInfo]) -> list[Level]:
    """The graph cut into levels; every rule is firm, so types in a cycle share a level and say so."""
    by_name = {i.rtype.qualified: i for i in infos}
    graph = edges(by_name.values())
    result = cut(by_name, {n: dict.fromkeys(befores, "before") for n, befores in graph.items()})
    out = []
    for number, names in enumerate(result.levels()):
        after = {n: _cycle_note(n, result.cycle_of(n)) + [f"after {p}: {why}" for p, why in sorted(graph[n].items())]
                 for n in names}
        out.append(Level(number, [by_name[n] for n in names], after))
    return out


def _cycle_note(name: str, group: tuple[str, ...]) -> list[str]:
    others = ", ".join(n for n in group if n != name)
    return [f"restored together with {others}: the ordering rules form a cycle between them"] if group else []
