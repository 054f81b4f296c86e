"""The `kubernetes` source's options, as a plan writes them (validated when the plan loads)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from dr.contract import ExporterOptions
from dr.exporters.kubernetes.provisioners import ProvisionerRule

DEFAULT_EXCLUDED_NAMESPACES = ["kube-system", "kube-public", "kube-node-lease"]
# What most users expect a cluster backup to hold besides configuration: the workloads. Pods
# and Jobs are exported only when nothing owns them (an owner recreates its own).
DEFAULT_WORKLOAD_KINDS = ["Deployment", "StatefulSet", "DaemonSet", "Job", "CronJob", "Pod"]


READINESS_CHECKS = ["pdb", "serving", "spot"]
# Seconds between a provider's preemption notice and the node going away: GKE Spot and
# preemptible VMs 30 s, EC2 Spot 120 s (the interruption notice), Azure Spot 30 s (the
# Preempt scheduled event); `other` for a flavor only known as spot by a generic label or taint.
DEFAULT_SPOT_NOTICE = {"gke": 30, "aws": 120, "azure": 30, "other": 30}


class ReadinessOptions(ExporterOptions):
    """The go-live checks run on what the backup lists (readiness/, docs/exporters/kubernetes.md)."""

    checks: list[Literal["pdb", "serving", "spot"]] = Field(default_factory=lambda: list(READINESS_CHECKS),
                                                          description="the checks to run; [] runs none")
    serving: list[str] = Field(default_factory=list, description=(
        "Deployments, StatefulSets and LeaderWorkerSets judged as serving, as `namespace/name` globs, "
        "besides those labelled or annotated dr.io/serving=true and every InferenceService"))
    zones: bool = Field(False, description="serving replicas must also be spread across zones "
                        "(topology.kubernetes.io/zone): set it when the plan's failure domains have zones")
    model_load_seconds: int = Field(300, ge=0, description=(
        "the longest a serving container may take to load its model: a startupProbe must allow that long"))
    spot_notice_seconds: dict[Literal["gke", "aws", "azure", "other"], int] = Field(
        default_factory=lambda: dict(DEFAULT_SPOT_NOTICE),
        description="each spot provider's notice window, seconds (keys gke, aws, azure, other)")

    @field_validator("spot_notice_seconds")
    @classmethod
    def _every_provider(cls, notice: dict[str, int]) -> dict[str, int]:
        return {**DEFAULT_SPOT_NOTICE, **notice}


class PlacementRuleOptions(ExporterOptions):
    """Where the data of a provisioner's volumes lives (provisioners.py), read before the built-in table."""

    provisioner: str = Field(min_length=1, description="a glob on the StorageClass's provisioner")
    where: Literal["cluster", "zone", "region"] = Field(description=(
        "cluster: on the cluster's own nodes; zone: in the zone the bound volume names; region: in its region"))
    reason: str = Field(min_length=1, description="why the data lives there, for people (findings quote it)")

    @field_validator("provisioner", "reason")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be blank")
        return value.strip()

    def rule(self) -> ProvisionerRule:
        return ProvisionerRule(self.provisioner, self.where, self.reason)


class KubernetesOptions(ExporterOptions):
    kubeconfig: str | None = Field(None, description="kubeconfig path (relative: the plan's folder); "
                                   "default: $KUBECONFIG or ~/.kube/config, else the in-cluster account")
    context: str | None = Field(None, description="kubeconfig context (default: the current one)")
    include_groups: list[str] = Field(default_factory=list, description=(
        "API groups (globs allowed) whose CRDs and custom resources are exported; empty: all"))
    exclude_groups: list[str] = Field(default_factory=list, description=(
        "API groups (globs allowed) whose CRDs and custom resources are not exported"))
    namespaces: list[str] = Field(default_factory=list, description="namespaces to export; empty: all")
    exclude_namespaces: list[str] = Field(default_factory=lambda: list(DEFAULT_EXCLUDED_NAMESPACES),
                                          description="namespaces never exported (the cluster's own)")
    workload_kinds: list[str] = Field(default_factory=lambda: list(DEFAULT_WORKLOAD_KINDS), description=(
        "built-in kinds exported besides the configuration, by Kind, plural or plural.group; "
        "default: Deployment, StatefulSet, DaemonSet, Job, CronJob, Pod (Jobs and Pods only when "
        "nothing owns them). A shorter list narrows the export: the default kinds it leaves out "
        "are still listed and scanned for dependencies, and named in a finding. Longer lists add "
        "kinds: Service, PersistentVolumeClaim, ValidatingWebhookConfiguration ..."))
    include_status: bool = Field(False, description="keep .status in the backup (never restored)")
    page_size: int = Field(500, ge=1, le=10_000, description="objects per list request (limit/continue)")
    list_timeout_seconds: float = Field(60.0, gt=0, description=(
        "longest wait for one list page; past it the backup fails naming the resource"))
    request_timeout_seconds: float = Field(30.0, gt=0, description="longest wait for any other request")
    parallelism: int = Field(4, ge=1, le=64, description="resource types listed, objects restored at once")
    retries: int = Field(6, ge=1, le=20, description="attempts per request on 429 and 5xx answers")
    readiness: ReadinessOptions = Field(default_factory=ReadinessOptions, description=(
        "go-live checks on the listed objects (PDBs, serving high availability, spot capacity), "
        "recorded as readiness findings"))
    placement_rules: list[PlacementRuleOptions] = Field(default_factory=list, description=(
        "where the volumes of a provisioner keep their data, read before the built-in table "
        "(`{provisioner: GLOB, where: cluster|zone|region, reason: TEXT}`, first match wins)"))
    crd_wait_seconds: float = Field(120.0, gt=0, description=(
        "restore: how long to wait for a restored CRD to be Established and served"))

    @field_validator("workload_kinds")
    @classmethod
    def _no_blank(cls, kinds: list[str]) -> list[str]:
        if any(not k.strip() for k in kinds):
            raise ValueError("kinds must not be blank")
        return [k.strip() for k in kinds]
