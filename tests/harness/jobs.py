"""A stand-in for the kubelet and the Job controller (and the garbage collector's part for Jobs).

No node can run pods on the test machines (see the shared TEST-INFRA.md), so `JobRunner` PLAYS THE
KUBELET AND THE JOB CONTROLLER against the emulated API server (tests/harness/kube.py): each new
Job matching its label selector gets a Pod object, and the pod's single container runs as a LOCAL
PROCESS of this machine; the Pod's and the Job's status follow it as the real controllers write
them. Its volumes:

- a ``persistentVolumeClaim`` is the claim's directory (tests/harness/volumes.py's CSI stand-in),
  once the claim is bound; ``readOnly`` (on the mount or the volume) is a read-only bind mount of it
  when this process is root and may mount (writes fail with EROFS), otherwise NOT enforced
  (``runner.read_only_enforced`` says which);
- an ``emptyDir`` is a fresh folder; a ``configMap`` or ``secret`` volume a folder of its keys;
- every argument of the command and every environment value at or under a mount path is moved to
  the folder standing for it (``/data/x`` -> ``<volume dir>/x``), as tests/harness/kubelet.py does:
  a process here cannot see the volume at the pod's path.

A pod here has no IP of its own: each ``containerPort`` P gets a free local port L, an argument
``--port=P`` (or ``P`` right after ``--port``) is rewritten to L, and the emulated API server's pod
proxy is told where P is (``cluster.serve_pod_port``). The Pod turns Running (podIP 127.0.0.1,
Ready) once something listens on every L (at once without ports).

Environment: PATH (and ``env=`` of the runner) plus the container's ``env``: literal values,
``secretKeyRef``/``configMapKeyRef`` read through the store (an optional missing key is left out),
``fieldRef`` metadata.name/metadata.namespace/status.podIP. ``envFrom`` and resource limits are
not honoured.

The Job controller's part: status.active/ready while the pod runs; on exit 0 succeeded 1 and
condition Complete; otherwise failed 1 and Failed (BackoffLimitExceeded) at the FIRST failure:
``backoffLimit`` retries and ``completions``/``parallelism`` above 1 are NOT emulated (one pod per
Job); ``activeDeadlineSeconds`` kills the process (SIGTERM, then SIGKILL) and fails the Job with
DeadlineExceeded. A deleted Job (or its namespace) has its process killed and its Pods deleted
(the garbage collector's part); stop() kills whatever still runs. A Pod deleted by hand kills its
process (the Job is then failed, no replacement pod is made).
"""

from __future__ import annotations

import base64
import os
import random
import shutil
import signal
import socket
import string
import subprocess
import threading
import time
import traceback
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .kube import EmulatedCluster, _now
from .volumes import CsiStandIn, _Background, create, delete, list_objects, set_status

__all__ = ["JobRunner", "PodRun", "container_exec"]

MANAGER = "kubelet-job-controller-stand-in"


@dataclass
class PodRun:
    """One Job's pod as this stand-in runs it."""

    namespace: str
    job: str
    job_uid: str
    pod: str
    folder: str
    ports: dict[int, int] = field(default_factory=dict)  # container port -> local port
    argv: list[str] = field(default_factory=list)
    process: subprocess.Popen | None = None
    code: int | None = None
    reason: str | None = None  # DeadlineExceeded, Deleted, an error of the stand-in
    deleted: bool = False
    binds: list[str] = field(default_factory=list)
    done: threading.Event = field(default_factory=threading.Event)
    thread: threading.Thread | None = None

    @property
    def log(self) -> str:
        return os.path.join(self.folder, "output.log")

    def output(self) -> str:
        try:
            with open(self.log, encoding="utf-8", errors="replace") as f:
                return f.read()
        except FileNotFoundError:
            return ""


class JobRunner(_Background):
    """Stands for the kubelet and the Job controller: Jobs matching `selector` run their container
    as a local process (see the module docstring for what is and is not emulated).

    Parameters:
        cluster: the emulated API server.
        csi: the CSI stand-in whose directories back the pods' claims.
        root: where the pods' folders (cwd, emptyDirs, output, bind mounts) go.
        selector: label selector of the Jobs to run (others are left alone, as if not scheduled).
        user: run the processes as this uid/gid (only when root), their own folders chowned to it.
        env: more environment for every process (e.g. a coverage setup).
        programs: argv[0] replacements, e.g. {"dr": "/venv/bin/dr"} (the image's PATH is not here).
        path: the processes' PATH (default: this process's).
        bind_read_only: make readOnly claim mounts read-only bind mounts when possible.
    """

    def __init__(self, cluster: EmulatedCluster, csi: CsiStandIn, root: str | os.PathLike[str], *,
                 selector: str = "app.kubernetes.io/component=volume-mover", user: int | None = None,
                 env: Mapping[str, str] | None = None, programs: Mapping[str, str] | None = None,
                 path: str | None = None, bind_read_only: bool = True) -> None:
        super().__init__(f"job-runner-{cluster.name}")
        self.cluster, self.csi, self.root, self.selector = cluster, csi, os.fspath(root), selector
        self.user = user if os.geteuid() == 0 else None
        self.env, self.programs = dict(env or {}), dict(programs or {})
        self.path = path or os.environ.get("PATH", "/usr/bin:/bin")
        self.read_only_enforced = bind_read_only and os.geteuid() == 0 and _can_bind_read_only(self.root)
        self.runs: dict[str, PodRun] = {}  # job uid -> its pod
        self._lock = threading.Lock()

    # ---- lifecycle -----------------------------------------------------------------------

    def start(self) -> "JobRunner":
        os.makedirs(self.root, exist_ok=True)
        self._start_thread()
        return self

    def stop(self) -> None:
        self._stop_thread()
        with self._lock:
            runs = list(self.runs.values())
        for run in runs:
            run.deleted = True
            _kill(run.process)
        for run in runs:
            if run.thread is not None:
                run.thread.join(timeout=15)
            _unbind(run)

    def __enter__(self) -> "JobRunner":
        return self.start()

    def __exit__(self, exc_type: Any, *_: Any) -> None:
        self.stop()
        if exc_type is None and self.errors:
            raise RuntimeError("the Job runner failed:\n" + "\n".join(self.errors))

    # ---- what tests ask ------------------------------------------------------------------

    def run_of(self, job: str, namespace: str | None = None, timeout: float = 10) -> PodRun:
        """The pod of Job `job` (waits until the runner has created it)."""
        deadline = time.monotonic() + timeout
        while True:
            with self._lock:
                found = [r for r in self.runs.values() if r.job == job and namespace in (None, r.namespace)]
            if found:
                return found[-1]
            if time.monotonic() > deadline:
                raise TimeoutError(f"no pod of Job {job} within {timeout} s" + self._errors_text())
            time.sleep(0.02)

    def pod_name(self, job: str, namespace: str | None = None, timeout: float = 10) -> str:
        return self.run_of(job, namespace, timeout).pod

    def wait(self, job: str, namespace: str | None = None, timeout: float = 60) -> int | None:
        """Wait for the Job's process to end; its exit code (None when killed by a signal)."""
        run = self.run_of(job, namespace, timeout)
        if not run.done.wait(timeout):
            raise TimeoutError(f"Job {job} still runs after {timeout} s; output:\n{run.output()}")
        return run.code

    def output(self, job: str, namespace: str | None = None) -> str:
        """What the Job's process printed (stdout and stderr), for diagnostics."""
        return self.run_of(job, namespace, timeout=0).output()

    def _errors_text(self) -> str:
        return ("; runner errors:\n" + "\n".join(self.errors)) if self.errors else ""

    # ---- the controller loop -------------------------------------------------------------

    def _tick(self) -> None:
        jobs = list_objects(self.cluster, "batch/v1", "Job", self.selector)
        uids = {j["metadata"]["uid"] for j in jobs}
        with self._lock:
            gone = [r for uid, r in self.runs.items() if uid not in uids and not r.deleted]
        for run in gone:  # the garbage collector: a deleted Job's pods go, their processes killed
            run.deleted = True
            _kill(run.process)
            delete(self.cluster, "v1", "Pod", run.pod, run.namespace)
        for job in jobs:
            meta = job["metadata"]
            if meta["uid"] in self.runs or meta.get("deletionTimestamp") or _finished(job):
                continue
            run = PodRun(namespace=meta["namespace"], job=meta["name"], job_uid=meta["uid"],
                         pod=f"{meta['name']}-{''.join(random.choices(string.ascii_lowercase, k=5))}",
                         folder="")
            run.folder = os.path.join(self.root, f"{run.namespace}.{run.pod}")
            with self._lock:
                self.runs[meta["uid"]] = run
            run.thread = threading.Thread(target=self._play, args=(job, run), daemon=True,
                                          name=f"pod-{run.pod}")
            run.thread.start()
        with self._lock:
            running = [r for r in self.runs.values() if r.process is not None and not r.done.is_set()]
        for run in running:  # a Pod deleted by hand: the kubelet kills its container
            if self.cluster.get_object("v1", "Pod", run.pod, run.namespace) is None and not run.deleted:
                run.reason = run.reason or "PodDeleted"
                _kill(run.process)

    def _play(self, job: dict[str, Any], run: PodRun) -> None:
        try:
            self._run_pod(job, run)
        except Exception:
            self.errors.append(f"Job {run.namespace}/{run.job}:\n{traceback.format_exc()}")
            _kill(run.process)
        finally:
            _unbind(run)
            if run.deleted:  # deleted while its pod was being made: the collector's part again
                delete(self.cluster, "v1", "Pod", run.pod, run.namespace)
            for port in run.ports:
                try:
                    self.cluster.serve_pod_port(run.namespace, run.pod, port, None)
                except Exception:
                    pass
            run.done.set()

    def _run_pod(self, job: dict[str, Any], run: PodRun) -> None:
        template = job["spec"]["template"]
        spec = template.get("spec") or {}
        (container,) = spec["containers"]
        labels = dict((template.get("metadata") or {}).get("labels") or {})
        labels |= {"job-name": run.job, "batch.kubernetes.io/job-name": run.job,
                   "controller-uid": run.job_uid, "batch.kubernetes.io/controller-uid": run.job_uid}
        pod = create(self.cluster, {
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": run.pod, "namespace": run.namespace, "labels": labels,
                         "annotations": dict((template.get("metadata") or {}).get("annotations") or {}),
                         "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": run.job,
                                              "uid": run.job_uid, "controller": True, "blockOwnerDeletion": True}]},
            "spec": {**spec, "nodeName": "stand-in-node"}})
        started = time.monotonic()
        set_status(self.cluster, job, {"startTime": _now(), "active": 1, "ready": 0}, MANAGER)
        deadline_s = job["spec"].get("activeDeadlineSeconds")
        deadline = None if deadline_s is None else started + float(deadline_s)
        os.makedirs(run.folder)
        folders = self._volumes(run, spec, container, deadline)
        if folders is None:  # deleted or out of time before its volumes were there
            return self._ended(job, pod, run)
        argv = [_moved(a, folders) for a in (container.get("command") or []) + (container.get("args") or [])]
        if not argv:
            raise ValueError("the container has no command: the image's entrypoint is not known here")
        argv[0] = self.programs.get(argv[0], argv[0])
        for port in (p["containerPort"] for p in container.get("ports") or []):
            run.ports[int(port)] = _free_port()
        argv = _ports_rewritten(argv, run.ports)
        run.argv = argv
        env = self._waited_environment(job, pod, run, container, folders, deadline)
        if env is None:  # deleted or out of time while a Secret or ConfigMap key was missing
            return self._ended(job, pod, run)
        cwd = os.path.join(run.folder, "cwd")
        os.makedirs(cwd)
        user = self.user
        if user is not None:
            for folder in [cwd, *(f for f in folders.values() if f.startswith(run.folder))]:
                shutil.chown(folder, user, user)
        for port, local in run.ports.items():
            self.cluster.serve_pod_port(run.namespace, run.pod, port, ("127.0.0.1", local))
        with open(run.log, "wb") as log:
            run.process = subprocess.Popen(argv, env=env, cwd=cwd, user=user, group=user, stdin=subprocess.DEVNULL,
                                           stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        began = _now()
        if run.deleted:
            _kill(run.process)
        ready = False
        while run.process.poll() is None:
            if not ready and all(_listening(p) for p in run.ports.values()):
                ready = True
                status = {"phase": "Running", "podIP": "127.0.0.1", "podIPs": [{"ip": "127.0.0.1"}],
                          "hostIP": "127.0.0.1", "startTime": began,
                          "conditions": [{"type": t, "status": "True", "lastTransitionTime": _now()}
                                         for t in ("PodScheduled", "Initialized", "ContainersReady", "Ready")],
                          "containerStatuses": [{"name": container["name"], "ready": True, "restartCount": 0,
                                                 "image": container.get("image", ""), "started": True,
                                                 "state": {"running": {"startedAt": began}}}]}
                if pod is not None:
                    set_status(self.cluster, pod, status, MANAGER)
                    set_status(self.cluster, job, {"ready": 1}, MANAGER)
            if deadline is not None and time.monotonic() > deadline and run.reason is None:
                run.reason = "DeadlineExceeded"
                _kill(run.process, grace=float(spec.get("terminationGracePeriodSeconds", 2)))
            time.sleep(0.05)
        run.code = run.process.returncode if run.process.returncode >= 0 else None
        self._ended(job, pod, run, container, began)

    def _ended(self, job: dict[str, Any], pod: dict[str, Any] | None, run: PodRun,
               container: Mapping[str, Any] | None = None, began: str | None = None) -> None:
        if run.deleted:
            return  # the Job is gone: nothing to report
        now = _now()
        succeeded = run.code == 0 and run.reason is None
        if pod is not None and container is not None:
            code = run.code if run.code is not None else 137
            set_status(self.cluster, pod, {
                "phase": "Succeeded" if succeeded else "Failed", "podIP": "127.0.0.1",
                "conditions": [{"type": "Ready", "status": "False", "lastTransitionTime": now,
                                "reason": "PodCompleted"}],
                "containerStatuses": [{"name": container["name"], "ready": False, "restartCount": 0,
                                       "image": container.get("image", ""), "started": False, "state": {
                                           "terminated": {"exitCode": code, "startedAt": began, "finishedAt": now,
                                                          "reason": "Completed" if code == 0 else "Error"}}}]},
                MANAGER)
        if succeeded:
            status = {"active": None, "ready": 0, "succeeded": 1, "completionTime": now, "conditions": [
                {"type": "Complete", "status": "True", "lastProbeTime": now, "lastTransitionTime": now}]}
        else:
            reason, message = {
                "DeadlineExceeded": ("DeadlineExceeded", "Job was active longer than specified deadline"),
            }.get(run.reason or "", ("BackoffLimitExceeded", "Job has reached the specified backoff limit"))
            status = {"active": None, "ready": 0, "failed": 1, "conditions": [
                {"type": "FailureTarget", "status": "True", "reason": reason, "message": message,
                 "lastProbeTime": now, "lastTransitionTime": now},
                {"type": "Failed", "status": "True", "reason": reason, "message": message,
                 "lastProbeTime": now, "lastTransitionTime": now}]}
        set_status(self.cluster, job, status, MANAGER)

    # ---- volumes and environment ---------------------------------------------------------

    def _volumes(self, run: PodRun, spec: Mapping[str, Any], container: Mapping[str, Any],
                 deadline: float | None) -> dict[str, str] | None:
        """{mount path: folder of this machine}; None when the pod ended before its claims bound."""
        volumes = {v["name"]: v for v in spec.get("volumes") or []}
        folders: dict[str, str] = {}
        for index, mount in enumerate(container.get("volumeMounts") or []):
            volume = volumes[mount["name"]]
            if "persistentVolumeClaim" in volume:
                source = volume["persistentVolumeClaim"]
                while True:
                    if run.deleted or (deadline is not None and time.monotonic() > deadline):
                        run.reason = run.reason or ("DeadlineExceeded" if not run.deleted else None)
                        return None
                    try:
                        folder = self.csi.directory_of(run.namespace, source["claimName"], timeout=0.5)
                        break
                    except TimeoutError:
                        continue
                if mount.get("subPath"):
                    folder = os.path.join(folder, mount["subPath"])
                    os.makedirs(folder, exist_ok=True)
                if (mount.get("readOnly") or source.get("readOnly")) and self.read_only_enforced:
                    point = os.path.join(run.folder, "mounts", str(index))
                    os.makedirs(point)
                    _bind_read_only(folder, point)
                    run.binds.append(point)
                    folder = point
            else:
                folder = os.path.join(run.folder, "volumes", mount["name"])
                os.makedirs(folder, exist_ok=True)
                if "configMap" in volume or "secret" in volume:
                    self._write_keys(run.namespace, volume, folder)
                elif "emptyDir" not in volume:
                    raise ValueError(f"volume {mount['name']}: only persistentVolumeClaim, emptyDir, configMap "
                                     "and secret volumes are stood in for")
            folders[mount["mountPath"]] = folder
        return folders

    def _write_keys(self, namespace: str, volume: Mapping[str, Any], folder: str) -> None:
        if "configMap" in volume:
            source, kind = volume["configMap"], "ConfigMap"
            obj = self.cluster.get_object("v1", kind, source["name"], namespace)
            data = {k: v.encode() for k, v in ((obj or {}).get("data") or {}).items()}
        else:
            source, kind = volume["secret"], "Secret"
            obj = self.cluster.get_object("v1", kind, source["secretName"], namespace)
            data = {k: base64.b64decode(v) for k, v in ((obj or {}).get("data") or {}).items()}
        if obj is None and not source.get("optional"):
            raise ValueError(f"{kind} of volume {volume['name']} is missing (the pod would not start)")
        items = source.get("items") or [{"key": k, "path": k} for k in data]
        for item in items:
            path = os.path.join(folder, item["path"])
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as f:
                f.write(data[item["key"]])

    def _waited_environment(self, job: dict[str, Any], pod: dict[str, Any] | None, run: PodRun,
                            container: Mapping[str, Any], folders: dict[str, str],
                            deadline: float | None) -> dict[str, str] | None:
        """The container's environment once every key it reads is there: as the kubelet does, a
        missing key keeps the container waiting (CreateContainerConfigError), it does not fail it."""
        while True:
            try:
                return self._environment(run, container, folders)
            except MissingKey as exc:
                if run.deleted or (deadline is not None and time.monotonic() > deadline):
                    run.reason = run.reason or ("DeadlineExceeded" if not run.deleted else None)
                    return None
                if pod is not None:
                    set_status(self.cluster, pod, {"phase": "Pending", "containerStatuses": [
                        {"name": container["name"], "ready": False, "restartCount": 0,
                         "image": container.get("image", ""), "started": False,
                         "state": {"waiting": {"reason": "CreateContainerConfigError", "message": str(exc)}}}]},
                        MANAGER)
                time.sleep(0.1)

    def _environment(self, run: PodRun, container: Mapping[str, Any], folders: dict[str, str]) -> dict[str, str]:
        env = {"PATH": self.path, **self.env}
        fields = {"metadata.name": run.pod, "metadata.namespace": run.namespace, "status.podIP": "127.0.0.1"}
        for entry in container.get("env") or []:
            if "value" in entry:
                env[entry["name"]] = _moved(str(entry["value"]), folders)
                continue
            source = entry.get("valueFrom") or {}
            if "fieldRef" in source:
                env[entry["name"]] = fields[source["fieldRef"]["fieldPath"]]
                continue
            ref, kind = ((source["secretKeyRef"], "Secret") if "secretKeyRef" in source
                         else (source["configMapKeyRef"], "ConfigMap"))
            obj = self.cluster.get_object("v1", kind, ref["name"], run.namespace)
            data = (obj or {}).get("data") or {}
            if ref["key"] in data:
                value = data[ref["key"]]
                env[entry["name"]] = base64.b64decode(value).decode() if kind == "Secret" else value
            elif not ref.get("optional"):
                raise MissingKey(f"couldn't find key {ref['key']} in {kind} {run.namespace}/{ref['name']}")
        return env


def container_exec(folders: Mapping[str, str], programs: Mapping[str, str] | None = None,
                   timeout: float = 120) -> Any:
    """A stand-in for the container runtime's exec (for ``EmulatedCluster.serve_pod_exec``): the
    command runs as a local process, an argument at or under a mount path moved to the folder that
    stands for it (as a Job's container here), argv[0] through ``programs``."""
    def run(container: str, argv: list[str]) -> tuple[int, bytes, bytes]:
        moved = [_moved(a, folders) for a in argv]
        if moved:
            moved[0] = (programs or {}).get(moved[0], moved[0])
        done = subprocess.run(moved, capture_output=True, timeout=timeout, stdin=subprocess.DEVNULL)
        return done.returncode, done.stdout, done.stderr
    return run


# ---- helpers ---------------------------------------------------------------------------------

class MissingKey(Exception):
    """A key the container's environment reads is not (yet) in its Secret or ConfigMap."""


def _finished(job: Mapping[str, Any]) -> bool:
    return any(c.get("type") in ("Complete", "Failed") and c.get("status") == "True"
               for c in (job.get("status") or {}).get("conditions") or [])


def _moved(value: str, folders: Mapping[str, str]) -> str:
    for mount in sorted(folders, key=len, reverse=True):
        if value == mount or value.startswith(mount.rstrip("/") + "/"):
            return folders[mount] + value[len(mount.rstrip("/")):]
    return value


def _ports_rewritten(argv: list[str], ports: Mapping[int, int]) -> list[str]:
    out = []
    for i, arg in enumerate(argv):
        if arg.startswith("--port=") and arg[7:].isdigit() and int(arg[7:]) in ports:
            arg = f"--port={ports[int(arg[7:])]}"
        elif i and argv[i - 1] == "--port" and arg.isdigit() and int(arg) in ports:
            arg = str(ports[int(arg)])
        out.append(arg)
    return out


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _listening(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return True
    except OSError:
        return False


def _kill(process: subprocess.Popen | None, grace: float = 2.0) -> None:
    """SIGTERM to the process group, SIGKILL after `grace` seconds, as the kubelet stops a container."""
    if process is None or process.poll() is not None:
        return
    try:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=max(grace, 0.1))
    except subprocess.TimeoutExpired:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        process.wait(timeout=10)
    except ProcessLookupError:
        pass


def _bind_read_only(source: str, point: str) -> None:
    for argv in (["mount", "--bind", source, point], ["mount", "-o", "remount,ro,bind", point]):
        done = subprocess.run(argv, capture_output=True, text=True)
        if done.returncode:
            subprocess.run(["umount", point], capture_output=True)
            raise RuntimeError(f"{' '.join(argv)}: {done.stderr.strip()}")


def _unbind(run: PodRun) -> None:
    while run.binds:
        subprocess.run(["umount", "-l", run.binds.pop()], capture_output=True)


def _can_bind_read_only(root: str) -> bool:
    os.makedirs(root, exist_ok=True)
    source, point = os.path.join(root, ".probe-src"), os.path.join(root, ".probe-ro")
    os.makedirs(source, exist_ok=True)
    os.makedirs(point, exist_ok=True)
    try:
        _bind_read_only(source, point)
    except RuntimeError:
        return False
    finally:
        subprocess.run(["umount", point], capture_output=True)
        os.rmdir(point)
        os.rmdir(source)
    return True
