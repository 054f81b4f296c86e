"""Pre and post hooks: commands run in the pods that mount a claim, around its snapshot.

A database on a volume is crash-consistent in a snapshot, which its recovery replays; a hook
makes it more (`CHECKPOINT` before the snapshot shortens that replay, `fsfreeze` makes the
filesystem itself quiet). Each `pre` runs before the snapshot is asked for (or the live copy
begins), each `post` once it is readyToUse (or the copy ended), and a `post` always runs after
its `pre` was tried: a failed or timed-out `pre` may still have frozen something.

Commands go through the API server's exec (`pods/exec`, RBAC verb create), in the container the
hook names. A command that outlives `timeout_seconds` failed; it is left to run in the container,
which exec cannot stop (a `timeout 50 ...` in the command bounds it there).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable
from urllib.parse import quote

from dr.exporters.volumes.cluster import Cluster, ClusterError
from dr.exporters.volumes.options import Hook
from dr.exporters.volumes.selecting import Claim
from dr.exporters.volumes.temporaries import VolumeError

TAIL = 400  # characters of a failed command's output the finding quotes


@dataclass
class Target:
    hook: Hook
    label: str
    pod: str
    container: str | None


@dataclass
class Hooks:
    """The hooks of one claim's copy: pre() before its snapshot, post() after (in `finally`)."""

    cluster: Cluster
    claim: Claim
    hooks: list[Hook]
    warn: Callable[[str], None]
    log: Callable[[str], None]
    _tried: list[Target] = field(default_factory=list)

    def pre(self) -> None:
        for target in self._targets():
            if not target.hook.pre:
                continue
            self._tried.append(target)
            problem = self._run(target, "pre", target.hook.pre)
            if problem and target.hook.on_error == "fail":
                raise VolumeError(f"{self.claim.key}: {problem} (on_error: fail): not copied")
            if problem:
                self.warn(f"{self.claim.key}: {problem} (on_error: continue): copied without it")

    def post(self) -> None:
        """Every post hook; its failure is a warning (the copy is made, the snapshot taken)."""
        ran = {(t.label, t.pod) for t in self._tried}
        for target in self._targets(quiet=True):
            if target.hook.post and (not target.hook.pre or (target.label, target.pod) in ran):
                problem = self._run(target, "post", target.hook.post)
                if problem:
                    self.warn(f"{self.claim.key}: {problem}")

    def _targets(self, quiet: bool = False) -> list[Target]:
        found = []
        for index, hook in enumerate(self.hooks):
            label = hook.name or f"hook {index + 1}"
            pods = self._pods(hook)
            if not pods and not quiet:
                self.log(f"{self.claim.key}: {label}: no running pod mounts the claim: not run")
            found += [Target(hook, label, pod, hook.container) for pod in pods]
        return found

    def _pods(self, hook: Hook) -> list[str]:
        query = {"labelSelector": hook.pods} if hook.pods else {}
        names = []
        for pod in self.cluster.items(f"/api/v1/namespaces/{quote(self.claim.namespace)}/pods", **query):
            labels = pod["metadata"].get("labels") or {}
            volumes = (pod.get("spec") or {}).get("volumes") or []
            if labels.get("dr.io/temporary") or (pod.get("status") or {}).get("phase") != "Running":
                continue
            if any((v.get("persistentVolumeClaim") or {}).get("claimName") == self.claim.name for v in volumes):
                names.append(pod["metadata"]["name"])
        return sorted(names)

    def _run(self, target: Target, when: str, argv: list[str]) -> str:
        """'' when the command succeeded, else what went wrong."""
        where = f"{target.label} {when} in pod {target.pod}" + (f" ({target.container})" if target.container else "")
        try:
            code, out, err = self.cluster.exec(self.claim.namespace, target.pod, target.container, argv,
                                               target.hook.timeout_seconds)
        except TimeoutError:
            return f"{where}: still running after {target.hook.timeout_seconds:g} s (timeout_seconds)"
        except ClusterError as exc:
            return f"{where}: could not run: {exc}"
        self.log(f"{self.claim.key}: {where}: exit {code}")
        if code != 0:
            said = (err or out).strip()[-TAIL:]
            return f"{where}: exit {code}" + (f": {said}" if said else "")
        return ""
