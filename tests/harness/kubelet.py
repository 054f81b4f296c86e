"""The kubelet and CronJob controller for rendered objects: their containers run as processes.

`Kubelet(documents, secret, ...)` reads what `dr deploy render` printed: each CronJob's schedule,
its container's command and environment, its volumes, its ServiceAccount. `start(name, when)`
runs one Job's container as a real process, as a node would:

- the ConfigMap volume (the plan) is written into a fresh folder, each emptyDir is a fresh empty
  folder (a real pod gets new ones every run), and every command argument and environment value
  at or under a mount path is moved to that folder (`/etc/dr/plan.yaml` -> `<pod>/etc-dr/plan.yaml`);
  a PersistentVolumeClaim is mounted where it already is (the test's data lives at the plan's path);
- `secretKeyRef` values come from the Secret the pod names (an optional key that is missing is left
  out, as the kubelet does);
- a ServiceAccount with its token mounted gets a kubeconfig for the emulated API server
  (KUBECONFIG): the stand-in for the projected token a non-root process here cannot be given at
  /var/run/secrets/kubernetes.io/serviceaccount;
- the process runs as the pod's runAsUser (when this process is root) with only its own folders
  writable, and nothing else of this machine's environment but PATH.

concurrencyPolicy Forbid is kept: a CronJob whose last Job still runs is not started again (the
start is counted as skipped). `rbac_denials(...)` holds requests the emulated API server logged
against the rendered RBAC rules of a ServiceAccount."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from datetime import datetime

import yaml
from croniter import croniter

CONTAINER_PATH = "spec.jobTemplate.spec.template.spec"


@dataclass
class Run:
    job: str
    tick: int
    process: subprocess.Popen
    code: int | None = None
    output: str = ""
    began: float = field(default_factory=time.monotonic)
    started_at: float = field(default_factory=time.time)  # wall clock, as dr stamps snapshots
    ended_at: float = 0.0


@dataclass
class JobTally:
    started: int = 0
    skipped: int = 0  # due while its previous Job still ran (concurrencyPolicy: Forbid)
    failed: list[str] = field(default_factory=list)  # "tick: code: last line"
    seconds: float = 0.0  # the Jobs' run time, summed


def _pod_spec(cronjob: dict) -> dict:
    spec = cronjob
    for key in CONTAINER_PATH.split("."):
        spec = spec[key]
    return spec


class Kubelet:
    def __init__(self, documents: list[dict], secret: dict[str, str], root: str, *, kubeconfig: str | None,
                 path: str, user: int | None = None):
        self.cronjobs = {d["metadata"]["name"]: d for d in documents if d["kind"] == "CronJob"}
        (self.configmap,) = [d for d in documents if d["kind"] == "ConfigMap"]
        self.secret, self.root, self.kubeconfig, self.path = secret, root, kubeconfig, path
        self.user = user if os.geteuid() == 0 else None
        self.suspended: set[str] = set()
        self.running: dict[str, Run] = {}
        self.finished: list[Run] = []
        self.tally = {name: JobTally() for name in self.cronjobs}
        self._pods = 0

    def due(self, when: datetime) -> list[str]:
        """The CronJobs whose schedule fires at `when` (the controller's view), suspended ones left out."""
        return sorted(n for n, c in self.cronjobs.items()
                      if n not in self.suspended and croniter.match(c["spec"]["schedule"], when))

    def start(self, name: str, tick: int, clock: dict[str, str] | None = None) -> bool:
        """clock: environment that fakes the process's clock (tests.harness.faked_day.faked_clock)."""
        if name in self.running:
            self.tally[name].skipped += 1
            return False
        pod = _pod_spec(self.cronjobs[name])
        (container,) = pod["containers"]
        folders = self._volumes(pod, container)
        argv = [self._moved(a, folders) for a in container["command"] + container.get("args", [])]
        env = self._environment(pod, container, folders) | (clock or {})
        user = self.user if pod["securityContext"].get("runAsNonRoot") else None
        if user is not None:
            for folder in folders.values():
                shutil.chown(folder, user, user)
        process = subprocess.Popen(argv, env=env, cwd=folders.get("/tmp", self.root), user=user, group=user,
                                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.running[name] = Run(name, tick, process)
        self.tally[name].started += 1
        return True

    def reap(self, wait: bool = False) -> list[Run]:
        """The Jobs that ended since the last call (all of them, with wait)."""
        done = []
        for name, run in list(self.running.items()):
            if wait or run.process.poll() is not None:
                run.output = run.process.communicate(timeout=600)[0]
                run.code = run.process.returncode
                run.ended_at = time.time()
                del self.running[name]
                done.append(run)
                self.tally[name].seconds += time.monotonic() - run.began
                if run.code:
                    last = (run.output.strip().splitlines() or [""])[-1]
                    self.tally[name].failed.append(f"{run.tick}: exit {run.code}: {last[:200]}")
        self.finished += done
        return done

    def _volumes(self, pod: dict, container: dict) -> dict[str, str]:
        """{mount path: host folder} for this pod: fresh folders, the ConfigMap's items written."""
        self._pods += 1
        volumes = {v["name"]: v for v in pod["volumes"]}
        folders = {}
        for mount in container["volumeMounts"]:
            volume = volumes[mount["name"]]
            if "persistentVolumeClaim" in volume:
                continue  # mounted where it is
            folder = os.path.join(self.root, f"pod-{self._pods}", mount["mountPath"].strip("/").replace("/", "-"))
            os.makedirs(folder)
            if "configMap" in volume:
                assert volume["configMap"]["name"] == self.configmap["metadata"]["name"]
                for item in volume["configMap"]["items"]:
                    with open(os.path.join(folder, item["path"]), "w", encoding="utf-8") as handle:
                        handle.write(self.configmap["data"][item["key"]])
            folders[mount["mountPath"]] = folder
        return folders

    @staticmethod
    def _moved(value: str, folders: dict[str, str]) -> str:
        for mount, folder in folders.items():
            if value == mount or value.startswith(mount.rstrip("/") + "/"):
                return folder + value[len(mount):]
        return value

    def _environment(self, pod: dict, container: dict, folders: dict[str, str]) -> dict[str, str]:
        env = {"PATH": self.path}
        for entry in container.get("env", []):
            if "value" in entry:
                env[entry["name"]] = self._moved(entry["value"], folders)
                continue
            ref = entry["valueFrom"]["secretKeyRef"]
            assert ref["name"] == "dr-credentials", ref
            if ref["key"] in self.secret:
                env[entry["name"]] = self.secret[ref["key"]]
            else:
                assert ref.get("optional"), f"{entry['name']}: key {ref['key']} missing from the Secret"
        if pod.get("automountServiceAccountToken") and self.kubeconfig:
            env["KUBECONFIG"] = self.kubeconfig
        return env


def rbac_denials(documents: list[dict], account: str, requests) -> list[str]:
    """Each logged API request (resource requests; discovery is open to every account) that no rule
    bound to ServiceAccount `account` allows: 'verb group/resource in namespace'."""
    rules = _bound_rules(documents, account)
    denied = []
    for record in requests:
        if record.resource is None:
            continue
        group = record.group or ""
        if not any(_allows(rule, record.verb, group, record.resource, record.namespace, scope)
                   for scope, rule in rules):
            denied.append(f"{record.verb} {group or 'core'}/{record.resource} in {record.namespace or '(cluster)'}")
    return sorted(set(denied))


def _bound_rules(documents: list[dict], account: str) -> list[tuple[str | None, dict]]:
    """(namespace the rule holds in, None: every namespace; rule) for each rule bound to `account`."""
    roles = {(d["kind"], d["metadata"].get("namespace"), d["metadata"]["name"]): d for d in documents
             if d["kind"] in ("ClusterRole", "Role")}
    found = []
    for binding in (d for d in documents if d["kind"] in ("ClusterRoleBinding", "RoleBinding")):
        if not any(s["kind"] == "ServiceAccount" and s["name"] == account for s in binding["subjects"]):
            continue
        scope = binding["metadata"].get("namespace") if binding["kind"] == "RoleBinding" else None
        ref = binding["roleRef"]
        role = roles[(ref["kind"], scope if ref["kind"] == "Role" else None, ref["name"])]
        found += [(scope, rule) for rule in role.get("rules", [])]
    return found


def _allows(rule: dict, verb: str, group: str, resource: str, namespace: str | None, scope: str | None) -> bool:
    def has(values, value):
        return "*" in values or value in values
    return (has(rule.get("verbs", []), verb) and has(rule.get("apiGroups", []), group)
            and has(rule.get("resources", []), resource) and (scope is None or scope == namespace))


def load(text: str) -> list[dict]:
    return [d for d in yaml.safe_load_all(text) if d]
