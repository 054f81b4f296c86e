"""The Kubernetes executor: a ShardJob as one batch/v1 Job with completionMode Indexed.

The Job runs dr's own image (the plan's dr_image), `completions: N` pods each with its index
in JOB_COMPLETION_INDEX, at most `parallelism` at once, and `backoffLimitPerIndex` retries per
index, so one shard's failure costs one shard's retries and never the other indexes'
(`maxFailedIndexes: N`: every index runs to its end and the coordinator learns all outcomes).
The job's files (the shard pointer) are a ConfigMap mounted at /etc/dr-shard, owned by the Job
so the cluster deletes it with the Job. The pods run as the CronJob's do (`dr deploy render`):
the same service account, non-root, a read-only root filesystem, the AWS keys from the same
Secret. An exit code 2 (the shard cannot start: retrying will not help) fails its index at once.

The coordinator watches the Job through the API (a watch on the one Job, re-opened until it
ends) and reads per-index results from its status: `completedIndexes` and `failedIndexes`
(interval lists, "0-2,5"), and the Failed condition (deadline exceeded, ...) for indexes that
never finished. If interrupted, it deletes the Job: nothing keeps copying for a coordinator
that is gone (the journals keep what was done).
"""

from __future__ import annotations

import os
import time
from typing import Callable

from dr.exporters.checkpoints.sharding.executors import CANNOT_START, Executor, ExecutorError, ShardJob, ShardOutcome
from dr.contract import AWS_CREDENTIALS
from dr.kits.kubeconfigs import KubeconfigError, load_into, resolve

MOUNT = "/etc/dr-shard"
PYTHON = "python"  # the image's interpreter (Dockerfile: python:3.11-slim)
IN_CLUSTER_NAMESPACE = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"
LABELS = {"app.kubernetes.io/name": "dr", "app.kubernetes.io/component": "shard"}
RUN_AS = 10001  # the image's dr user
WATCH_SECONDS = 60  # one watch request; re-opened until the Job ends


class ShardSetupError(ExecutorError):
    """The executor cannot be set up from the plan (no image, no credentials)."""


def index_set(text: str | None) -> set[int]:
    """'0-2,5' -> {0, 1, 2, 5} (the Job status's interval lists)."""
    out: set[int] = set()
    for part in (text or "").split(","):
        if part.strip():
            lo, _, hi = part.partition("-")
            out.update(range(int(lo), int(hi or lo) + 1))
    return out


def job_object(job: ShardJob, namespace: str, image: str, *, service_account: str, secret: str,
               timeout_seconds: int) -> dict:
    """The Job, as the API receives it."""
    labels = {**LABELS, "dr.io/shard-job": job.name}
    env = [{"name": "HOME", "value": "/tmp"}, {"name": "TMPDIR", "value": "/tmp"}]
    env += [{"name": k, "value": v} for k, v in sorted(job.env.items())]
    env += [{"name": c.env, "valueFrom": {"secretKeyRef": {"name": secret, "key": c.key, "optional": c.optional}}}
            for c in AWS_CREDENTIALS]
    container = {
        "name": "dr", "image": image, "imagePullPolicy": "IfNotPresent",
        "command": [PYTHON, *job.argv(MOUNT)], "env": env,
        "securityContext": {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True,
                            "capabilities": {"drop": ["ALL"]}},
        "volumeMounts": [{"name": "shard", "mountPath": MOUNT, "readOnly": True},
                         {"name": "tmp", "mountPath": "/tmp"}]}
    pod = {"serviceAccountName": service_account, "automountServiceAccountToken": False,
           "restartPolicy": "Never",  # backoffLimitPerIndex needs it: a retry is a new pod
           "securityContext": {"runAsNonRoot": True, "runAsUser": RUN_AS, "runAsGroup": RUN_AS,
                               "seccompProfile": {"type": "RuntimeDefault"}},
           "containers": [container],
           "volumes": [{"name": "shard", "configMap": {"name": job.name}}, {"name": "tmp", "emptyDir": {}}]}
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": job.name, "namespace": namespace, "labels": labels},
            "spec": {"completionMode": "Indexed", "completions": job.count, "parallelism": job.at_once,
                     "backoffLimitPerIndex": job.retries_per_index, "maxFailedIndexes": job.count,
                     "podFailurePolicy": {"rules": [{"action": "FailIndex", "onExitCodes": {
                         "containerName": "dr", "operator": "In", "values": [CANNOT_START]}}]},
                     "activeDeadlineSeconds": timeout_seconds, "ttlSecondsAfterFinished": 86400,
                     "template": {"metadata": {"labels": labels}, "spec": pod}}}


def outcome_of(job: ShardJob, status: dict, ended: bool) -> ShardOutcome | None:
    """The outcome once every index has ended (or the Job has); None while it runs."""
    done, failed = index_set(status.get("completedIndexes")), index_set(status.get("failedIndexes"))
    conditions = {c.get("type"): c for c in status.get("conditions") or [] if c.get("status") == "True"}
    over = conditions.get("Failed") or conditions.get("Complete")
    if len(done | failed) < job.count and over is None and not ended:
        return None
    outcome = ShardOutcome(job.count, succeeded=done & set(range(job.count)))
    why = ""
    if "Failed" in conditions:
        c = conditions["Failed"]
        why = f"; the Job failed: {c.get('reason', '')} {c.get('message', '')}".rstrip()
    for i in range(job.count):
        if i in failed:
            outcome.failed[i] = f"failed after {job.retries_per_index + 1} attempt(s) (backoffLimitPerIndex){why}"
        elif i not in done:
            outcome.failed[i] = f"never completed{why or ': the coordinator stopped waiting'}"
    return outcome


class KubernetesExecutor(Executor):
    def __init__(self, api_client, namespace: str, image: str, *, service_account: str = "dr-backup",
                 secret: str = "dr-credentials", timeout_seconds: int = 6 * 3600,
                 log: Callable[[str], None] = lambda m: None) -> None:
        import kubernetes.client

        self.batch = kubernetes.client.BatchV1Api(api_client)
        self.core = kubernetes.client.CoreV1Api(api_client)
        self.namespace, self.image, self.log = namespace, image, log
        self.service_account, self.secret, self.timeout_seconds = service_account, secret, timeout_seconds

    @classmethod
    def from_options(cls, options, base_dir: str) -> "KubernetesExecutor":
        import kubernetes.client

        image = options.image or os.environ.get("DR_IMAGE")
        if not image:
            raise ShardSetupError("shards.kubernetes.image is not set and DR_IMAGE is not in the environment: "
                                  "set it to dr's own image (the plan's dr_image)")
        configuration = kubernetes.client.Configuration()
        kubeconfig = os.path.join(base_dir, options.kubeconfig) if options.kubeconfig else None
        try:  # kubectl's rules: the option's file, else $KUBECONFIG, else ~/.kube/config, else in-cluster
            load_into(configuration, resolve(kubeconfig, options.context))
        except KubeconfigError as exc:
            raise ShardSetupError(f"shards.kubernetes: {exc}") from None
        return cls(kubernetes.client.ApiClient(configuration), options.namespace or _own_namespace(), image,
                   service_account=options.service_account, secret=options.secret,
                   timeout_seconds=options.timeout_seconds)

    def run(self, job: ShardJob) -> ShardOutcome:
        import kubernetes.client
        import urllib3.exceptions

        try:
            return self._run(job)
        except kubernetes.client.ApiException as exc:
            raise ExecutorError(f"the Kubernetes API refused the shard Job {self.namespace}/{job.name}: "
                                f"{exc.status} {exc.reason}") from None
        except urllib3.exceptions.HTTPError as exc:
            raise ExecutorError(f"the Kubernetes API is unreachable for the shard Job {job.name}: {exc}") from None

    def _run(self, job: ShardJob) -> ShardOutcome:
        body = job_object(job, self.namespace, self.image, service_account=self.service_account,
                          secret=self.secret, timeout_seconds=self.timeout_seconds)
        self._replace_finished(job.name)
        self.core.create_namespaced_config_map(self.namespace, {
            "metadata": {"name": job.name, "labels": body["metadata"]["labels"]}, "data": dict(job.files)})
        created = self.batch.create_namespaced_job(self.namespace, body)
        self.core.patch_namespaced_config_map(job.name, self.namespace, {"metadata": {"ownerReferences": [{
            "apiVersion": "batch/v1", "kind": "Job", "name": job.name, "uid": created.metadata.uid,
            "controller": False, "blockOwnerDeletion": False}]}})
        self.log(f"created Job {self.namespace}/{job.name}: {job.count} indexes, {job.at_once} at once")
        try:
            return self._watch(job)
        except BaseException:  # interrupted or lost: stop the shards (their journals keep their work)
            self._delete(job.name)
            raise

    def _watch(self, job: ShardJob) -> ShardOutcome:
        import kubernetes.watch

        deadline = time.monotonic() + self.timeout_seconds + WATCH_SECONDS
        while time.monotonic() < deadline:
            watch = kubernetes.watch.Watch()
            for event in watch.stream(self.batch.list_namespaced_job, self.namespace,
                                      field_selector=f"metadata.name={job.name}", timeout_seconds=WATCH_SECONDS):
                if event["type"] == "DELETED":
                    watch.stop()
                    return outcome_of(job, {}, ended=True)
                outcome = outcome_of(job, event["raw_object"].get("status") or {}, ended=False)
                if outcome is not None:
                    watch.stop()
                    return outcome
        status = self.batch.read_namespaced_job(job.name, self.namespace).to_dict().get("status") or {}
        return outcome_of(job, _camel(status), ended=True)

    def _replace_finished(self, name: str) -> None:
        """A Job of the same task left by an earlier run (same name): delete it and its map."""
        import kubernetes.client

        try:
            self.batch.read_namespaced_job(name, self.namespace)
        except kubernetes.client.ApiException as exc:
            if exc.status != 404:
                raise
        else:
            self._delete(name)

    def _delete(self, name: str) -> None:
        import kubernetes.client

        for call in (lambda: self.batch.delete_namespaced_job(name, self.namespace, propagation_policy="Background"),
                     lambda: self.core.delete_namespaced_config_map(name, self.namespace)):
            try:
                call()
            except kubernetes.client.ApiException as exc:
                if exc.status != 404:
                    raise


def _own_namespace() -> str:
    try:
        with open(IN_CLUSTER_NAMESPACE, encoding="utf-8") as f:
            return f.read().strip() or "default"
    except OSError:
        return "default"


def _camel(status: dict) -> dict:
    """The client's snake_case status (read_namespaced_job) in the API's spelling."""
    names = {"completed_indexes": "completedIndexes", "failed_indexes": "failedIndexes"}
    return {names.get(k, k): v for k, v in status.items()}
