"""The temporary objects of one run: VolumeSnapshots, claims made from them, mover Jobs, tokens.

Every one carries the labels below: the run's id and the source's name. They are deleted when
the claim's copy ends, again when the run ends (also when it is interrupted: `finally`), and a
run removes, before it starts, every temporary of its source that another run left (a run that
was killed). Runs of one source never overlap: dr backup and dr restore hold the repository's
lock, so a temporary of this source from another run is a dead run's. Two plans must therefore
not give volumes sources of one cluster the same name (docs/exporters/volumes.md).

The mover Job (least privilege): dr's image, no service account token, a read-only root
filesystem, every capability dropped but the ones reading (DAC_READ_SEARCH) or writing files of
any owner (CHOWN, FOWNER, DAC_OVERRIDE) needs, the claim mounted read-only for a backup, a
deadline (activeDeadlineSeconds), and the token that lets only this run read the volume in a
Secret the Job's pod reads.
"""

from __future__ import annotations

import base64
import hashlib
import itertools
import re
import secrets
import time
from dataclasses import dataclass, field
from typing import Callable
from urllib.parse import quote

from dr.exporters.volumes.cluster import Cluster, ClusterError
from dr.exporters.volumes.wire import PORT, TOKEN_ENV

TEMPORARY = "dr.io/temporary"
SOURCE = "dr.io/volumes-source"
RUN = "dr.io/run"
CLAIM = "dr.io/claim"
COMPONENT = {"app.kubernetes.io/name": "dr", "app.kubernetes.io/component": "volume-mover"}
SNAPSHOTS = "/apis/snapshot.storage.k8s.io/v1"
KINDS = (  # deleted in this order: a Job before the claim its pod mounts, a claim before its snapshot
    ("jobs", "/apis/batch/v1"), ("persistentvolumeclaims", "/api/v1"),
    ("volumesnapshots", SNAPSHOTS), ("secrets", "/api/v1"))
MOVER = ["python", "-m", "dr.exporters.volumes.mover", "--root", "/data", "--port", str(PORT)]


class VolumeError(Exception):
    """One claim's copy failed; the message names the claim and the cause."""


class ClaimGone(VolumeError):
    """The claim was deleted after the backup listed it, before its copy began: there is nothing
    to copy, and nothing of it is lost that still exists."""


def pause(attempt: int) -> float:
    """Seconds between two looks at an object dr waits for: 50 ms doubling to 200 ms for the
    first ~8 s, then 1 s (a CSI snapshot or a pod is often ready within a second, where a
    doubling to 1 s overshot it by up to half a second, and some take minutes)."""
    return min(0.2 if attempt < 40 else 1.0, 0.05 * 2 ** min(attempt, 5))


def label_value(text: str) -> str:
    """A label value (63 characters of [A-Za-z0-9._-]) standing for text."""
    clean = re.sub(r"[^A-Za-z0-9._-]", "-", text).strip("-._")
    if clean == text and len(text) <= 63:
        return text
    return (clean[:54].rstrip("-._") + "-" + hashlib.sha256(text.encode()).hexdigest()[:8]).lstrip("-._")


def path_of(namespace: str, plural: str, name: str = "") -> str:
    base = dict((k, v) for k, v in KINDS).get(plural, "/api/v1")
    return f"{base}/namespaces/{quote(namespace)}/{plural}" + (f"/{quote(name)}" if name else "")


@dataclass
class Mover:
    namespace: str
    job: str
    pod: str
    token: str


@dataclass
class Run:
    """The temporaries of one backup or restore of one source."""

    cluster: Cluster
    source: str
    image: str
    log: Callable[[str], None]
    job_seconds: int = 3600
    start_seconds: float = 300.0
    id: str = field(default_factory=lambda: secrets.token_hex(4))
    made: list[tuple[str, str, str, str]] = field(default_factory=list)  # (claim, namespace, plural, name)

    @property
    def labels(self) -> dict[str, str]:
        return {TEMPORARY: "volumes", SOURCE: label_value(self.source), RUN: self.id}

    def name(self, claim: str, what: str) -> str:
        digest = hashlib.sha256(f"{claim}/{what}".encode()).hexdigest()[:6]
        return f"dr-{what}-{self.id}-{digest}"

    def _metadata(self, name: str, namespace: str, claim: str, extra: dict | None = None) -> dict:
        return {"name": name, "namespace": namespace, "labels": {**self.labels, **(extra or {})},
                "annotations": {CLAIM: claim}}

    def _create(self, namespace: str, plural: str, body: dict) -> dict:
        # recorded before the request: a create whose answer is lost may still have happened
        self.made.append((body["metadata"]["annotations"][CLAIM], namespace, plural, body["metadata"]["name"]))
        return self.cluster.create(path_of(namespace, plural), body)

    # -- snapshots ---------------------------------------------------------------------------
    def snapshot(self, namespace: str, claim: str, snapshot_class: str, timeout: float) -> dict:
        """A VolumeSnapshot of the claim, once readyToUse (VolumeError after `timeout`)."""
        name = self.name(f"{namespace}/{claim}", "snap")
        self._create(namespace, "volumesnapshots", {
            "apiVersion": "snapshot.storage.k8s.io/v1", "kind": "VolumeSnapshot",
            "metadata": self._metadata(name, namespace, f"{namespace}/{claim}"),
            "spec": {"volumeSnapshotClassName": snapshot_class, "source": {"persistentVolumeClaimName": claim}}})
        deadline = time.monotonic() + timeout
        for attempt in itertools.count():
            found = self.cluster.get(path_of(namespace, "volumesnapshots", name)) or {}
            status = found.get("status") or {}
            if status.get("readyToUse"):
                return found
            error = (status.get("error") or {}).get("message")
            if error:
                raise VolumeError(f"{namespace}/{claim}: snapshot {name} failed: {error}")
            if self.cluster.get(path_of(namespace, "persistentvolumeclaims", claim)) is None:
                raise ClaimGone(f"{namespace}/{claim}: deleted during the backup, before its snapshot was taken")
            if time.monotonic() > deadline:
                raise VolumeError(f"{namespace}/{claim}: snapshot {name} (class {snapshot_class}) was not "
                                  f"readyToUse after {timeout:.0f} s (options.snapshot_timeout_seconds)")
            time.sleep(pause(attempt))

    def claim_from(self, snapshot: dict, source_claim: dict) -> str:
        """A temporary claim provisioned from the snapshot (the copy the mover reads)."""
        meta = snapshot["metadata"]
        namespace, name = meta["namespace"], self.name(meta["annotations"][CLAIM], "read")
        spec = source_claim.get("spec") or {}
        size = (snapshot.get("status") or {}).get("restoreSize") or \
            ((spec.get("resources") or {}).get("requests") or {}).get("storage")
        self._create(namespace, "persistentvolumeclaims", {
            "apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": self._metadata(name, namespace, meta["annotations"][CLAIM]),
            "spec": {"accessModes": spec.get("accessModes") or ["ReadWriteOnce"],
                     "storageClassName": spec.get("storageClassName"),
                     "volumeMode": spec.get("volumeMode") or "Filesystem",
                     "resources": {"requests": {"storage": size}},
                     "dataSource": {"apiGroup": "snapshot.storage.k8s.io", "kind": "VolumeSnapshot",
                                    "name": meta["name"]}}})
        return name

    # -- movers -----------------------------------------------------------------------------
    def mover(self, namespace: str, claim: str, *, write: bool, for_claim: str, node: str | None = None) -> Mover:
        """Start a mover Job on `claim` and wait until its pod serves (VolumeError if it cannot)."""
        job, token = self.name(for_claim, "write" if write else "move"), secrets.token_urlsafe(32)
        self._create(namespace, "secrets", {
            "apiVersion": "v1", "kind": "Secret", "type": "Opaque",
            "metadata": self._metadata(job, namespace, for_claim),
            "data": {"token": base64.b64encode(token.encode()).decode()}})
        self._create(namespace, "jobs", self.job_object(namespace, job, claim, for_claim, write=write, node=node))
        pod = self._wait_ready(namespace, job, for_claim)
        return Mover(namespace, job, pod, token)

    def job_object(self, namespace: str, job: str, claim: str, for_claim: str, *, write: bool,
                   node: str | None) -> dict:
        caps = ["CHOWN", "FOWNER", "DAC_OVERRIDE", "DAC_READ_SEARCH"] if write else ["DAC_READ_SEARCH"]
        container = {
            "name": "mover", "image": self.image, "imagePullPolicy": "IfNotPresent",
            "command": MOVER + (["--write"] if write else []),
            "ports": [{"containerPort": PORT, "name": "mover"}],
            "env": [{"name": "HOME", "value": "/tmp"},
                    {"name": TOKEN_ENV, "valueFrom": {"secretKeyRef": {"name": job, "key": "token"}}}],
            "readinessProbe": {"tcpSocket": {"port": PORT}, "periodSeconds": 1},
            "volumeMounts": [{"name": "data", "mountPath": "/data", "readOnly": not write},
                             {"name": "tmp", "mountPath": "/tmp"}],
            "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"memory": "512Mi"}},
            "securityContext": {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True,
                                "runAsUser": 0, "runAsNonRoot": False,
                                "capabilities": {"drop": ["ALL"], "add": caps}}}
        pod = {"restartPolicy": "Never", "automountServiceAccountToken": False,
               "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}},
               "containers": [container],
               "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": claim, "readOnly": not write}},
                           {"name": "tmp", "emptyDir": {}}]}
        if node:
            pod["nodeName"] = node  # a live read of a ReadWriteOnce volume: attached on that node
        return {"apiVersion": "batch/v1", "kind": "Job",
                "metadata": self._metadata(job, namespace, for_claim, COMPONENT),
                "spec": {"backoffLimit": 0, "activeDeadlineSeconds": self.job_seconds,
                         "ttlSecondsAfterFinished": 600,
                         "template": {"metadata": {"labels": {**self.labels, **COMPONENT}}, "spec": pod}}}

    def _wait_ready(self, namespace: str, job: str, claim: str) -> str:
        deadline = time.monotonic() + self.start_seconds
        last = "no pod yet"
        for attempt in itertools.count():
            if time.monotonic() >= deadline:
                break
            for pod in self.cluster.items(f"/api/v1/namespaces/{quote(namespace)}/pods",
                                          labelSelector=f"job-name={job}"):
                status = pod.get("status") or {}
                phase = status.get("phase", "Pending")
                if phase in ("Failed", "Succeeded"):
                    raise VolumeError(f"{claim}: mover pod {pod['metadata']['name']} ended ({phase}) before "
                                      "it served")
                ready = any(c.get("type") == "Ready" and c.get("status") == "True"
                            for c in status.get("conditions") or [])
                if phase == "Running" and ready:
                    return pod["metadata"]["name"]
                last = _waiting_reason(pod) or f"pod {pod['metadata']['name']} {phase}"
            found = self.cluster.get(path_of(namespace, "jobs", job)) or {}
            for condition in (found.get("status") or {}).get("conditions") or []:
                if condition.get("type") == "Failed" and condition.get("status") == "True":
                    raise VolumeError(f"{claim}: mover Job {job} failed: {condition.get('reason')} "
                                      f"{condition.get('message', '')}".rstrip())
            time.sleep(pause(attempt))
        raise VolumeError(f"{claim}: the mover pod of Job {job} did not serve within {self.start_seconds:.0f} s "
                          f"({last}); options.start_timeout_seconds")

    # -- clean-up ---------------------------------------------------------------------------
    def remove(self, namespace: str, plural: str, name: str) -> None:
        try:
            self.cluster.delete(path_of(namespace, plural, name))
        except ClusterError as exc:
            self.log(f"could not delete {plural} {namespace}/{name}: {exc} (the next run removes it)")
        self.made = [m for m in self.made if m[1:] != (namespace, plural, name)]

    def remove_for(self, claim: str | None = None) -> None:
        """This run's temporaries of one claim (None: of every claim), in dependency order."""
        for plural, _ in KINDS:
            for owner, namespace, kind, name in list(self.made):
                if kind == plural and claim in (None, owner):
                    self.remove(namespace, kind, name)

    def remove_stale(self) -> int:
        """Every temporary of this source that another run left behind; the count removed."""
        selector = f"{TEMPORARY}=volumes,{SOURCE}={label_value(self.source)},{RUN}!={self.id}"
        removed = 0
        for plural, base in KINDS:
            try:
                stale = list(self.cluster.items(f"{base}/{plural}", labelSelector=selector))
            except ClusterError as exc:
                if exc.status == 404 and base == SNAPSHOTS:
                    continue  # the cluster serves no snapshots: none can be stale
                raise
            for item in stale:
                meta = item["metadata"]
                self.log(f"removing {plural} {meta['namespace']}/{meta['name']} left by run "
                         f"{meta.get('labels', {}).get(RUN)}")
                self.remove(meta["namespace"], plural, meta["name"])
                removed += 1
        return removed


def _waiting_reason(pod: dict) -> str:
    for status in (pod.get("status") or {}).get("containerStatuses") or []:
        waiting = (status.get("state") or {}).get("waiting") or {}
        if waiting.get("reason"):
            return f"pod {pod['metadata']['name']}: {waiting['reason']} {waiting.get('message', '')}".rstrip()
    for condition in (pod.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "PodScheduled" and condition.get("status") == "False":
            return f"pod {pod['metadata']['name']}: not scheduled: {condition.get('message', '')}"
    return ""
