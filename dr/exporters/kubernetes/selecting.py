"""What a backup exports, as data with reasons.

Three tables decide it:
  CONFIGURATION  built-in types always exported: the configuration a platform is made of;
  NEVER          types never exported, however the groups are filtered: runtime state that
                 the owning controller recreates, and that would do harm if restored;
  SKIPPED        single objects never exported: per-cluster objects that the destination's
                 own controllers create (restoring the source's copy would conflict).
Custom resources are exported for every CRD whose group passes include_groups/exclude_groups
(globs); built-in kinds when workload_kinds names them (by default the workloads:
options.DEFAULT_WORKLOAD_KINDS). A default workload kind the plan leaves out is still listed
and scanned (`scanned`): its objects are not stored, but what they depend on is recorded, so
the audit knows what the platform needs.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field
from typing import Callable

from dr.exporters.kubernetes.options import DEFAULT_WORKLOAD_KINDS
from dr.exporters.kubernetes.resources import ResourceType

CRD_KEY = ("apiextensions.k8s.io", "customresourcedefinitions")
CONFIGURATION: dict[tuple[str, str], str] = {
    CRD_KEY: "the schema of every custom resource; restored first",
    ("", "namespaces"): "everything namespaced lives in one",
    ("", "configmaps"): "application configuration",
    ("", "secrets"): "credentials and keys (stored encrypted)",
    ("", "serviceaccounts"): "workload identities, imagePullSecrets",
    ("rbac.authorization.k8s.io", "roles"): "who may do what in a namespace",
    ("rbac.authorization.k8s.io", "rolebindings"): "who may do what in a namespace",
    ("rbac.authorization.k8s.io", "clusterroles"): "who may do what in the cluster",
    ("rbac.authorization.k8s.io", "clusterrolebindings"): "who may do what in the cluster",
    ("scheduling.k8s.io", "priorityclasses"): "pods naming a missing PriorityClass are rejected",
    ("storage.k8s.io", "storageclasses"): "volume claims bind through them",
    ("node.k8s.io", "runtimeclasses"): "pods naming a missing RuntimeClass are rejected",
    ("networking.k8s.io", "ingressclasses"): "an Ingress whose class is missing is served by no controller",
    ("policy", "poddisruptionbudgets"): "how many pods a drain may take at once; a restored platform "
                                         "without them is drained unprotected (and the readiness checks "
                                         "judge them)",
}
NEVER: dict[tuple[str, str], str] = {
    ("kueue.x-k8s.io", "workloads"): "Kueue runtime state: recreated from each job; a restored "
                                      "Workload would claim quota for a job that may not exist",
    ("acme.cert-manager.io", "orders"): "cert-manager: per-issuance ACME state, recreated on demand",
    ("acme.cert-manager.io", "challenges"): "cert-manager: per-issuance ACME state, recreated on demand",
    ("cert-manager.io", "certificaterequests"): "cert-manager: one per issuance; restoring them "
                                                 "makes cert-manager act on stale requests",
}


def _skip_root_ca(obj: dict) -> bool:
    return obj["metadata"].get("name") == "kube-root-ca.crt"


def _skip_token(obj: dict) -> bool:
    return obj.get("type") == "kubernetes.io/service-account-token"


def _skip_owned(obj: dict) -> bool:
    return bool(obj["metadata"].get("ownerReferences"))


def _skip_bootstrap_rbac(obj: dict) -> bool:
    return (obj["metadata"].get("labels") or {}).get("kubernetes.io/bootstrapping") == "rbac-defaults"


# Kind -> (predicate, reason): checked only for objects of that kind.
SKIPPED: dict[str, list[tuple[Callable[[dict], bool], str]]] = {
    "ConfigMap": [(_skip_root_ca, "kube-root-ca.crt is published into every namespace by each cluster, "
                                  "with its own CA")],
    "Secret": [(_skip_token, "service account tokens are signed by the source cluster's key; the "
                             "destination issues its own")],
    "ClusterRole": [(_skip_bootstrap_rbac, "default RBAC that every API server reconciles itself")],
    "ClusterRoleBinding": [(_skip_bootstrap_rbac, "default RBAC that every API server reconciles itself")],
    "Pod": [(_skip_owned, "pods with an owner (ReplicaSet, Job, StatefulSet, a custom controller) are "
                          "recreated by it; only standalone pods are exported")],
    "Job": [(_skip_owned, "jobs with an owner (a CronJob, a Kueue or JobSet controller) are recreated "
                          "by it; restoring one would run it twice")],
}


def skip_reason(obj: dict) -> str | None:
    for matches, reason in SKIPPED.get(obj.get("kind", ""), ()):
        if matches(obj):
            return reason
    return None


def _matches(group: str, patterns: list[str]) -> bool:
    return any(fnmatch.fnmatchcase(group, p) for p in patterns)


@dataclass
class Selection:
    """The types one backup exports, and the namespaces it looks in."""

    types: list[ResourceType]
    custom: set[tuple[str, str]]  # (group, plural) of types defined by CRDs
    namespaces: list[str]  # empty: all
    excluded_namespaces: set[str]
    unknown_kinds: list[str] = field(default_factory=list)
    scanned: list[ResourceType] = field(default_factory=list)  # listed for dependencies, not stored
    left_out: dict[tuple[str, str], str] = field(default_factory=dict)  # served, not exported: why

    def wants_namespace(self, namespace: str | None) -> bool:
        if not namespace:
            return True
        if namespace in self.excluded_namespaces:
            return False
        return not self.namespaces or namespace in self.namespaces

    def exported_kinds(self) -> set[tuple[str, str]]:
        """(group, Kind) of every exported type: an ownerReference to one of these is kept."""
        return {(t.group, t.kind) for t in self.types}


def group_selected(group: str, options) -> bool:
    if options.include_groups and not _matches(group, options.include_groups):
        return False
    return not _matches(group, options.exclude_groups)


def _wanted_kind(rtype: ResourceType, kinds: list[str]) -> str | None:
    for name in kinds:
        lowered = name.lower()
        if lowered in (rtype.kind.lower(), rtype.plural, rtype.qualified):
            return name
    return None


def select(served: list[ResourceType], crds: list[dict], options) -> Selection:
    """Choose the exported types from what the cluster serves and which CRDs define them."""
    custom = {(c["spec"]["group"], c["spec"]["names"]["plural"]) for c in crds}
    chosen, named, scanned = [], set(), []
    left_out: dict[tuple[str, str], str] = {}
    for rtype in served:
        if rtype.key in NEVER:
            left_out[rtype.key] = f"never exported: {NEVER[rtype.key]}"
            continue
        kind_name = _wanted_kind(rtype, options.workload_kinds)
        if kind_name:
            named.add(kind_name)
        if rtype.key in CONFIGURATION or kind_name or (rtype.key in custom and group_selected(rtype.group, options)):
            chosen.append(rtype)
        elif rtype.group in ("", "apps", "batch") and _wanted_kind(rtype, DEFAULT_WORKLOAD_KINDS):
            scanned.append(rtype)
            left_out[rtype.key] = "left out by workload_kinds (listed and scanned for dependencies)"
        else:
            left_out[rtype.key] = _why_not(rtype, custom)
    unknown = [k for k in options.workload_kinds if k not in named]
    return Selection(chosen, custom, list(options.namespaces), set(options.exclude_namespaces), unknown, scanned,
                     left_out)


def _why_not(rtype: ResourceType, custom: set[tuple[str, str]]) -> str:
    if rtype.key in custom:
        return "its group is not selected by include_groups/exclude_groups"
    return ("not a custom resource, not configuration and not in workload_kinds "
            "(add it to workload_kinds to export it)")
