"""Kueue, checked at backup time: every reference Kueue resolves by name (refchecks.py).

What Kueue does with a reference that names nothing, and so why each is a finding:
  ClusterQueue -> ResourceFlavor (resourceGroups[].flavors[].name)   inactive, FlavorNotFound
  ClusterQueue -> AdmissionCheck (admissionChecks, admissionChecksStrategy)
                                                                     inactive, AdmissionCheckNotFound
  LocalQueue -> ClusterQueue (spec.clusterQueue)                     its workloads are never admitted
  ResourceFlavor -> Topology (spec.topologyName)                     topology-aware scheduling fails
                                                                     for the flavor's workloads
  AdmissionCheck -> its parameters (ProvisioningRequestConfig, MultiKueueConfig)
                                                                     the check stays inactive, so
                                                                     every ClusterQueue using it is
  MultiKueueConfig -> MultiKueueCluster (spec.clusters[])            that worker cluster is never used
  MultiKueueCluster -> its kubeconfig Secret (kubeConfig or clusterSource.kubeConfig with
                     locationType Secret, in Kueue's namespace)     the worker cluster is unreachable
  ClusterQueue -> Cohort (spec.cohortName, v1beta1 spec.cohort), Cohort -> Cohort (parentName)
                                                                     info: Kueue makes an implicit
                                                                     cohort, without the quota or
                                                                     fair-sharing a Cohort object holds
"""

from __future__ import annotations

from typing import Iterator

from dr.exporters.kubernetes.refchecks import ReferenceCheck, Wanted, referrer, spec, text

GROUP = "kueue.x-k8s.io"
# Where a MultiKueueCluster's kubeconfig Secret lives: the namespace of Kueue's controller.
KUEUE_NAMESPACE = "kueue-system"
_PARAMETER_KINDS = {"ProvisioningRequestConfig", "MultiKueueConfig"}
_INACTIVE = "Kueue keeps the ClusterQueue inactive ({reason}): nothing it covers is admitted, in the source " \
            "and after a restore"


def flavor_refs(cq: dict) -> Iterator[str]:
    for group in spec(cq).get("resourceGroups") or []:
        for flavor in (group or {}).get("flavors") or []:
            if isinstance(flavor, dict) and text(flavor.get("name")):
                yield flavor["name"]


def check_refs(cq: dict) -> Iterator[str]:
    body = spec(cq)
    for name in body.get("admissionChecks") or []:
        if text(name):
            yield name
    for rule in (body.get("admissionChecksStrategy") or {}).get("admissionChecks") or []:
        if isinstance(rule, dict) and text(rule.get("name")):
            yield rule["name"]


def _cluster_queue(cq: dict) -> Iterator[Wanted]:
    who = referrer("ClusterQueue", cq)
    for name in flavor_refs(cq):
        yield Wanted(who, "ResourceFlavor", name, "kueue-flavor-missing", _INACTIVE.format(reason="FlavorNotFound"))
    for name in check_refs(cq):
        yield Wanted(who, "AdmissionCheck", name, "kueue-admission-check-missing",
                     _INACTIVE.format(reason="AdmissionCheckNotFound"))
    cohort = text(spec(cq).get("cohortName")) or text(spec(cq).get("cohort"))
    if cohort:
        yield _cohort(who, cohort)


def _cohort(who: str, name: str) -> Wanted:
    return Wanted(who, "Cohort", name, "kueue-cohort-implicit",
                  "Kueue makes it an implicit cohort, with no quota or fair-sharing weight of its own; if a "
                  "Cohort object should define them, it is not restored", severity="info")


def _local_queue(lq: dict) -> Iterator[Wanted]:
    name = text(spec(lq).get("clusterQueue"))
    if name:
        yield Wanted(referrer("LocalQueue", lq), "ClusterQueue", name, "kueue-cluster-queue-missing",
                     "workloads submitted to the LocalQueue are never admitted (ClusterQueueDoesNotExist)")


def _resource_flavor(flavor: dict) -> Iterator[Wanted]:
    name = text(spec(flavor).get("topologyName"))
    if name:
        yield Wanted(referrer("ResourceFlavor", flavor), "Topology", name, "kueue-topology-missing",
                     "workloads that ask for topology-aware scheduling on this flavor are not admitted")


def _admission_check(check: dict) -> Iterator[Wanted]:
    parameters = spec(check).get("parameters") or {}
    kind, name = parameters.get("kind"), text(parameters.get("name"))
    if name and kind in _PARAMETER_KINDS and parameters.get("apiGroup", GROUP) == GROUP:
        yield Wanted(referrer("AdmissionCheck", check), kind, name, "kueue-check-parameters-missing",
                     "the admission check stays inactive, and so does every ClusterQueue that uses it")


def _multikueue_config(config: dict) -> Iterator[Wanted]:
    for name in spec(config).get("clusters") or []:
        if text(name):
            yield Wanted(referrer("MultiKueueConfig", config), "MultiKueueCluster", name,
                         "kueue-multikueue-cluster-missing", "MultiKueue never dispatches workloads to that cluster")


def _multikueue_cluster(cluster: dict) -> Iterator[Wanted]:
    body = spec(cluster)
    kubeconfig = body.get("kubeConfig") or (body.get("clusterSource") or {}).get("kubeConfig") or {}
    name = text(kubeconfig.get("location"))
    if name and kubeconfig.get("locationType", "Secret") == "Secret":
        yield Wanted(referrer("MultiKueueCluster", cluster), "Secret", f"{KUEUE_NAMESPACE}/{name}",
                     "kueue-kubeconfig-secret-missing",
                     "Kueue cannot reach the worker cluster (its kubeconfig is that Secret's `kubeconfig` key)")


def _cohort_parent(cohort: dict) -> Iterator[Wanted]:
    parent = text(spec(cohort).get("parentName"))
    if parent:
        yield _cohort(referrer("Cohort", cohort), parent)


def kueue_check() -> ReferenceCheck:
    tracked = {(GROUP, plural): kind for plural, kind in (
        ("resourceflavors", "ResourceFlavor"), ("admissionchecks", "AdmissionCheck"),
        ("clusterqueues", "ClusterQueue"), ("topologies", "Topology"), ("cohorts", "Cohort"),
        ("provisioningrequestconfigs", "ProvisioningRequestConfig"), ("multikueueconfigs", "MultiKueueConfig"),
        ("multikueueclusters", "MultiKueueCluster"))}
    tracked[("", "secrets")] = "Secret"
    readers = {(GROUP, "clusterqueues"): _cluster_queue, (GROUP, "localqueues"): _local_queue,
               (GROUP, "resourceflavors"): _resource_flavor, (GROUP, "admissionchecks"): _admission_check,
               (GROUP, "multikueueconfigs"): _multikueue_config, (GROUP, "multikueueclusters"): _multikueue_cluster,
               (GROUP, "cohorts"): _cohort_parent}
    return ReferenceCheck(tracked, readers)
