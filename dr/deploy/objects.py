"""The Kubernetes objects, as plain dicts in a stable order with stable names.

Each object is paired with the comment lines written above it: what YAML keys cannot say
(why a rule is wide, what a policy cannot express, which Secret keys to create).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

from dr.deploy.access import Access, Grant
from dr.deploy.egress import Egress
from dr.deploy.gathering import PLAN_DIR, PLAN_PATH
from dr.contract import Credential, RunNeeds

APP = "dr"
SERVICE_ACCOUNT, PLAN_CONFIGMAP, SECRET = "dr-backup", "dr-plan", "dr-credentials"
BACKUP_ROLE, NAMESPACED_ROLE, RESTORE_ROLE = "dr-backup-read", "dr-backup-read-namespaced", "dr-restore"
WRITE_ROLE = "dr-backup-write"
LABELS = {"app.kubernetes.io/name": APP, "app.kubernetes.io/component": "backup"}
COMPONENTS = ("backup", "prune", "verify", "status", "audit")  # the pods the NetworkPolicy selects
CACHE_DIR = "/var/cache/dr"  # DR_CACHE_DIR: the manifest cache (dr.repository.manifest_cache)
CACHE_SIZE_LIMIT = "1Gi"  # manifests only, a few KiB per snapshot
# How late a run may start, how long it may take, and how much history is kept (deploy/README.md).
STARTING_DEADLINE_SECONDS, ACTIVE_DEADLINE_SECONDS = 600, 1500
SUCCESSFUL_HISTORY, FAILED_HISTORY = 3, 5
RUN_AS = 10001  # the image's dr user (Dockerfile)


@dataclass
class Doc:
    obj: dict
    comments: list[str] = field(default_factory=list)


@dataclass
class Job:
    """One CronJob: what it runs, when, and which exit codes are its verdict rather than a
    transient failure (those fail the Job at once; the others are retried once)."""

    name: str
    schedule: str
    command: list[str]
    component: str  # one of COMPONENTS
    answers: tuple[int, ...]
    deadline_seconds: int
    comments: list[str]


@dataclass
class Pod:
    """What every CronJob's pod shares: the image, the needs it must satisfy, the sizes."""

    image: str
    namespace: str
    needs: list[RunNeeds]
    resources: dict
    resources_why: str
    token: bool  # the service account token is mounted


def meta(name: str, namespace: str | None) -> dict:
    out = {"name": name}
    if namespace:
        out["namespace"] = namespace
    out["labels"] = dict(LABELS)
    return out


def service_account(namespace: str, token: bool) -> Doc:
    return Doc({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta(SERVICE_ACCOUNT, namespace),
                "automountServiceAccountToken": token},
               ["The backup's identity. On EKS, prefer a role (IRSA) to static AWS keys: annotate it with",
                "eks.amazonaws.com/role-arn and leave the aws-* keys out of the Secret.",
                "The API token is mounted only when a source reads the Kubernetes API."
                if token else "No source reads the Kubernetes API: no token is mounted."])


def plan_configmap(namespace: str, plan_text: str) -> Doc:
    return Doc({"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta(PLAN_CONFIGMAP, namespace),
                "data": {"plan.yaml": plan_text}},
               [f"The plan, mounted read-only at {PLAN_PATH}. It holds no credential (anyone who can read",
                "ConfigMaps in the namespace can read it); only age public keys."])


def roles(namespace: str, rbac: Access, restore: list[dict]) -> list[Doc]:
    docs = []
    if rbac.cluster_rules:
        comment = ["Read-only: exactly the resources the plan's sources read (" + "; ".join(rbac.why) + ")."]
        if rbac.reads_everything:
            comment.append("A source reads ALL resources of every API group (get/list/watch on * in *): its "
                           "include_groups is empty or a glob.")
        docs.append(_role(BACKUP_ROLE, rbac.cluster_rules, comment))
        docs.append(_binding("ClusterRoleBinding", BACKUP_ROLE, None, BACKUP_ROLE, namespace))
    if rbac.namespaced_rules:
        docs.append(_role(NAMESPACED_ROLE, rbac.namespaced_rules,
                          [f"Read-only, bound only in the namespaces the sources read: {', '.join(rbac.namespaces)}."]))
        docs += [_binding("RoleBinding", NAMESPACED_ROLE, ns, NAMESPACED_ROLE, namespace) for ns in rbac.namespaces]
    if restore:
        docs.append(_role(RESTORE_ROLE, restore, [
            "The restore's role: writes what the backup reads. NEVER bound by default: bind it for the",
            f"time of a restore only (kubectl create clusterrolebinding dr-restore --clusterrole={RESTORE_ROLE} ...)."]))
    return docs


def write_roles(grants: list[Grant], sa_namespace: str) -> list[Doc]:
    """A Role and its RoleBinding in each namespace sources write in: never cluster-wide."""
    docs = []
    for grant in grants:
        docs.append(Doc({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                         "metadata": meta(WRITE_ROLE, grant.namespace), "rules": grant.rules},
                        [f"Writes, only in namespace {grant.namespace}: " + "; ".join(grant.why) + "."]))
        binding = _binding("RoleBinding", WRITE_ROLE, grant.namespace, WRITE_ROLE, sa_namespace)
        binding.obj["roleRef"]["kind"] = "Role"
        docs.append(binding)
    return docs


def _role(name: str, rules: list[dict], comments: list[str]) -> Doc:
    return Doc({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": meta(name, None),
                "rules": rules}, comments)


def _binding(kind: str, name: str, namespace: str | None, role: str, sa_namespace: str) -> Doc:
    return Doc({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": kind, "metadata": meta(name, namespace),
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
                "subjects": [{"kind": "ServiceAccount", "name": SERVICE_ACCOUNT, "namespace": sa_namespace}]})


def network_policy(namespace: str, rules: Egress) -> Doc:
    comments = ["Egress only to the plan's endpoints, the metrics endpoint, the API server when a source reads it,",
                "and DNS to kube-dns."]
    if rules.public:
        comments += ["A NetworkPolicy cannot name a host: these public endpoints are allowed by port only",
                     "(to any address on that port): " + ", ".join(rules.public)]
    if rules.unparsed:
        comments.append("Endpoints dr could not read as host and port (allow them yourself): " + ", ".join(rules.unparsed))
    return Doc({"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": meta("dr-backup", namespace),
                "spec": {"podSelector": {"matchLabels": {"app.kubernetes.io/name": APP}, "matchExpressions": [
                    {"key": "app.kubernetes.io/component", "operator": "In", "values": list(COMPONENTS)}]},
                         "policyTypes": ["Egress"],
                         "egress": rules.rules}}, comments)


def cronjob(job: Job, pod: Pod) -> Doc:
    labels = {**LABELS, "app.kubernetes.io/component": job.component}
    spec = {"schedule": job.schedule, "timeZone": "Etc/UTC",
            # never two runs of one CronJob at once: the second would wait on the repository lock, or pile up
            "concurrencyPolicy": "Forbid", "startingDeadlineSeconds": STARTING_DEADLINE_SECONDS,
            "successfulJobsHistoryLimit": SUCCESSFUL_HISTORY, "failedJobsHistoryLimit": FAILED_HISTORY,
            "jobTemplate": {"spec": {
                # one retry for what may be transient (1, 3, 5); an invalid plan (2) or the
                # command's verdict (damage 6, blockers 4, an RPO breach 7) fails the Job at once
                "backoffLimit": 1,
                "podFailurePolicy": {"rules": [{"action": "FailJob", "onExitCodes": {
                    "containerName": "dr", "operator": "In", "values": list(job.answers)}}]},
                "activeDeadlineSeconds": job.deadline_seconds, "ttlSecondsAfterFinished": 86400,
                "template": {"metadata": {"labels": dict(labels)}, "spec": _pod_spec(job, pod)}}}}
    return Doc({"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {**meta(job.name, pod.namespace),
                                                                          "labels": labels}, "spec": spec},
               [*job.comments, pod.resources_why])


def _pod_spec(job: Job, pod: Pod) -> dict:
    volumes, mounts = _volumes(pod.needs)
    return {"serviceAccountName": SERVICE_ACCOUNT, "automountServiceAccountToken": pod.token,
            "restartPolicy": "Never",
            "securityContext": {"runAsNonRoot": True, "runAsUser": RUN_AS, "runAsGroup": RUN_AS, "fsGroup": RUN_AS,
                                "seccompProfile": {"type": "RuntimeDefault"}},
            "containers": [{"name": "dr", "image": pod.image, "imagePullPolicy": "IfNotPresent",
                            "command": job.command, "env": _env(pod.needs, pod.image),
                            "securityContext": {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True,
                                                "capabilities": {"drop": ["ALL"]}},
                            "resources": pod.resources, "volumeMounts": mounts}],
            "volumes": volumes}


def credentials(needs: list[RunNeeds]) -> list[Credential]:
    """Every credential, once per key, sorted by key."""
    return sorted({c.key: c for n in needs for c in n.credentials}.values(), key=lambda c: c.key)


def _env(needs: list[RunNeeds], image: str) -> list[dict]:
    # the root filesystem is read-only; pods dr starts (checkpoint shards) run dr's own image
    plain = {"HOME": "/tmp", "TMPDIR": "/tmp", "DR_IMAGE": image, "DR_CACHE_DIR": CACHE_DIR}
    for n in needs:
        plain.update(n.env)
    env = [{"name": k, "value": plain[k]} for k in sorted(plain)]
    for cred in credentials(needs):
        if cred.env:
            ref = {"name": SECRET, "key": cred.key}
            if cred.optional:
                ref["optional"] = True
            env.append({"name": cred.env, "valueFrom": {"secretKeyRef": ref}})
    return env


def _volumes(needs: list[RunNeeds]) -> tuple[list[dict], list[dict]]:
    volumes = [{"name": "plan", "configMap": {"name": PLAN_CONFIGMAP, "items": [{"key": "plan.yaml", "path": "plan.yaml"}]}},
               {"name": "tmp", "emptyDir": {"sizeLimit": "10Gi"}},
               # lost with the pod; the Helm chart can put it on a PersistentVolumeClaim (cache.existingClaim)
               {"name": "cache", "emptyDir": {"sizeLimit": CACHE_SIZE_LIMIT}}]
    mounts = [{"name": "plan", "mountPath": PLAN_DIR, "readOnly": True}, {"name": "tmp", "mountPath": "/tmp"},
              {"name": "cache", "mountPath": CACHE_DIR}]
    files = [c for c in credentials(needs) if c.path]
    if files:
        volumes.append({"name": "credentials", "secret": {"secretName": SECRET, "defaultMode": 0o440,
                                                          "items": [{"key": c.key, "path": c.key} for c in files]}})
        mounts += [{"name": "credentials", "mountPath": c.path, "subPath": c.key, "readOnly": True} for c in files]
    for root in data_roots(needs):
        name = claim_name(root)
        volumes.append({"name": name, "persistentVolumeClaim": {"claimName": name, "readOnly": True}})
        mounts.append({"name": name, "mountPath": root, "readOnly": True})
    return volumes, mounts


def data_roots(needs: list[RunNeeds]) -> list[str]:
    """The folders mounted for the paths sources read: each path's first two components
    (/mnt/platform for /mnt/platform/config), one mount for paths that share them."""
    roots = set()
    for n in needs:
        for path in n.paths:
            parts = [p for p in os.path.normpath(path).split("/") if p]
            if parts and not path.startswith(PLAN_DIR + "/"):
                roots.add("/" + "/".join(parts[:2]))
    return sorted(roots)


def claim_name(root: str) -> str:
    return ("dr-data-" + re.sub(r"[^a-z0-9]+", "-", root.lower()).strip("-"))[:63].rstrip("-")
