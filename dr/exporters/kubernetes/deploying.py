"""What a kubernetes source needs in a pod (contract v2 run_needs): the API reads its options imply.

Read access is derived from the options alone, as the export decides it (selecting.py): the
configuration types, the workload kinds (and the default ones a shorter list still scans), and
the custom resources of the selected groups. RBAC has no globs and no exclusions, so a group
glob, an empty include_groups (every group) or exclude_groups read wider than the export, and
say so in a note.
"""

from __future__ import annotations

import os

from dr.contract import CREDENTIALS_DIR, ApiRead, Credential, RunNeeds
from dr.exporters.kubernetes.options import DEFAULT_WORKLOAD_KINDS, KubernetesOptions
from dr.exporters.kubernetes.selecting import CONFIGURATION

VOLUMES_WHY = "where each claim's volume data lives (the claims and their PersistentVolumes)"
IN_CLUSTER_API = "https://kubernetes.default.svc:443"
# Built-in kinds a plan may name in workload_kinds: Kind -> (group, plural, namespaced). The
# export resolves any served kind at run time; a renderer only knows these.
BUILTIN_KINDS: dict[str, tuple[str, str, bool]] = {
    "Deployment": ("apps", "deployments", True), "StatefulSet": ("apps", "statefulsets", True),
    "DaemonSet": ("apps", "daemonsets", True), "ReplicaSet": ("apps", "replicasets", True),
    "Job": ("batch", "jobs", True), "CronJob": ("batch", "cronjobs", True), "Pod": ("", "pods", True),
    "Service": ("", "services", True), "PersistentVolumeClaim": ("", "persistentvolumeclaims", True),
    "PersistentVolume": ("", "persistentvolumes", False), "Endpoints": ("", "endpoints", True),
    "LimitRange": ("", "limitranges", True), "ResourceQuota": ("", "resourcequotas", True),
    "Ingress": ("networking.k8s.io", "ingresses", True),
    "IngressClass": ("networking.k8s.io", "ingressclasses", False),
    "NetworkPolicy": ("networking.k8s.io", "networkpolicies", True),
    "HorizontalPodAutoscaler": ("autoscaling", "horizontalpodautoscalers", True),
    "PodDisruptionBudget": ("policy", "poddisruptionbudgets", True),
    "ValidatingWebhookConfiguration": ("admissionregistration.k8s.io", "validatingwebhookconfigurations", False),
    "MutatingWebhookConfiguration": ("admissionregistration.k8s.io", "mutatingwebhookconfigurations", False),
}
_CLUSTER_SCOPED_CONFIG = {"namespaces", "clusterroles", "clusterrolebindings", "priorityclasses", "storageclasses",
                          "runtimeclasses", "ingressclasses", "customresourcedefinitions"}


def run_needs(options: KubernetesOptions, base_dir: str, source: str) -> RunNeeds:
    needs = RunNeeds()
    scoped: dict[tuple[str, bool], set[str]] = {}
    for group, plural in CONFIGURATION:
        scoped.setdefault((group, plural not in _CLUSTER_SCOPED_CONFIG), set()).add(plural)
    for kind in dict.fromkeys([*options.workload_kinds, *DEFAULT_WORKLOAD_KINDS]):
        found = _kind(kind)
        if found is None:
            needs.notes.append(f"workload kind {kind!r} is not one the renderer knows: grant get, list and "
                               "watch on it yourself (or write it as plural.group)")
            continue
        group, plural, namespaced = found
        scoped.setdefault((group, namespaced), set()).add(plural)
    namespaces = tuple(sorted(options.namespaces))
    for (group, namespaced), plurals in sorted(scoped.items()):
        needs.api_reads.append(ApiRead(group, tuple(sorted(plurals)), namespaces if namespaced else (),
                                       "configuration and workloads the export lists"))
    # where each claim's data lives (volumedata.py): the claims, and the volumes they are bound to
    needs.api_reads += [ApiRead("", ("persistentvolumeclaims",), namespaces, VOLUMES_WHY),
                        ApiRead("", ("persistentvolumes",), (), VOLUMES_WHY)]
    needs.api_reads += _custom_reads(options, needs.notes)
    _connection(options, base_dir, source, needs)
    return needs


def _kind(name: str) -> tuple[str, str, bool] | None:
    if name in BUILTIN_KINDS:
        return BUILTIN_KINDS[name]
    for kind, (group, plural, namespaced) in BUILTIN_KINDS.items():
        if name.lower() in (kind.lower(), plural, f"{plural}.{group}"):
            return group, plural, namespaced
    if "." in name:  # plural.group of a kind not in the table: its scope is unknown, read cluster-wide
        plural, group = name.split(".", 1)
        return group, plural.lower(), False
    return None


def _custom_reads(options: KubernetesOptions, notes: list[str]) -> list[ApiRead]:
    why = "custom resources of the selected groups (scope known only from the cluster's CRDs: cluster-wide)"
    if options.exclude_groups:
        notes.append(f"exclude_groups {options.exclude_groups} cannot be expressed in RBAC: those groups "
                     "are readable too, though not exported")
    if not options.include_groups or any(set(g) & set("*?[") for g in options.include_groups):
        notes.append("custom resources of every API group are read (include_groups is empty or a glob; RBAC "
                     "has no globs): get, list and watch on * in *")
        return [ApiRead("*", ("*",), (), "all: " + why)]
    return [ApiRead(group, ("*",), (), why) for group in sorted(set(options.include_groups))]


def _connection(options: KubernetesOptions, base_dir: str, source: str, needs: RunNeeds) -> None:
    if not options.kubeconfig:
        needs.endpoints.append(IN_CLUSTER_API)
        return
    path = os.path.normpath(os.path.join(base_dir, options.kubeconfig))
    if path.startswith(base_dir.rstrip("/") + "/"):  # beside the plan, i.e. in the plan's read-only mount
        path = f"{CREDENTIALS_DIR}/kubeconfig-{source}"
        needs.notes.append(f"kubeconfig {options.kubeconfig!r} is relative to the plan: write it absolute as "
                           f"{path}, where the pod mounts it")
    needs.credentials.append(Credential(f"kubeconfig-{source}", "the kubeconfig of the cluster this source "
                                        "backs up", path=path))
    needs.notes.append("the cluster is the kubeconfig's: apply the backup ClusterRole there, and allow "
                       "egress to its API server (its address is not in the plan)")
