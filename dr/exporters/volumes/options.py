"""The `volumes` source's options (docs/exporters/volumes.md lists each one)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from dr.contract import ExporterOptions


class Hook(ExporterOptions):
    """A command run in the pods that mount a claim: `pre` before its snapshot is taken (or its
    live copy begins), `post` once the snapshot is readyToUse (or the live copy ended), and
    always after a `pre` that was tried, so that what `pre` froze is thawed."""

    #: how the output names the hook (default: `hook N`, its place in the list)
    name: str | None = None
    #: a label selector on the pods that mount the claim (empty: every running pod that mounts it)
    pods: str = ""
    #: the container to run in (default: the pod's first container)
    container: str | None = None
    #: the command run before the snapshot (argv, no shell: `[sh, -c, "..."]` for one)
    pre: list[str] = Field(default_factory=list)
    #: the command run after it
    post: list[str] = Field(default_factory=list)
    #: how long each command may take; past it the hook failed (the command itself is left to run
    #: in the container: the API server's exec cannot stop it)
    timeout_seconds: float = Field(60.0, gt=0)
    #: `fail`: a failed `pre` fails the claim's copy (its `post` still runs); `continue`: it is a
    #: warning and the copy goes on
    on_error: Literal["fail", "continue"] = "fail"

    @model_validator(mode="after")
    def _a_command(self) -> "Hook":
        if not self.pre and not self.post:
            raise ValueError("a hook needs `pre`, `post`, or both")
        return self


class VolumesOptions(ExporterOptions):
    #: kubeconfig path (relative: the plan's folder); default: $KUBECONFIG, ~/.kube/config, in-cluster
    kubeconfig: str | None = None
    #: kubeconfig context (default: the current one)
    context: str | None = None
    #: namespaces whose claims are copied (empty: every namespace)
    namespaces: list[str] = Field(default_factory=list)
    #: a label selector on the claims (`app=qdrant,tier!=scratch`); empty: every claim
    selector: str = ""
    #: storage classes whose claims are copied (empty: every class)
    storage_classes: list[str] = Field(default_factory=list)
    #: workloads whose claims are copied, `Kind/name` in the claim's namespace (StatefulSet,
    #: Deployment, Pod ...); a claim is theirs when a pod they own mounts it, or when a
    #: StatefulSet's volumeClaimTemplate names it; empty: every claim
    workloads: list[str] = Field(default_factory=list)
    #: `auto`: a crash-consistent copy from a VolumeSnapshot when the claim's CSI driver has a
    #: VolumeSnapshotClass, else the live volume (with a warning); `always`: a claim without one
    #: fails; `never`: always the live volume
    snapshot: Literal["auto", "always", "never"] = "auto"
    #: the VolumeSnapshotClass to use (default: the driver's class marked default, else its only one)
    snapshot_class: str | None = None
    #: how long a snapshot may take to become readyToUse
    snapshot_timeout_seconds: float = Field(600.0, gt=0)
    #: how long a mover pod may take to start serving (image pull, volume attach)
    start_timeout_seconds: float = Field(300.0, gt=0)
    #: the mover Job's deadline (activeDeadlineSeconds): the longest one volume's copy may take
    job_timeout_seconds: int = Field(3600, gt=0)
    #: dr's image, which the mover Jobs run (the same image as the backup CronJob's)
    image: str = Field(min_length=1)
    #: globs on a file's path in its volume (`lost+found`, `*.tmp`); an excluded directory is not entered
    exclude: list[str] = Field(default_factory=lambda: ["lost+found"])
    #: files smaller than this many bytes are stored together, a directory's in packs of up to
    #: 4 MiB and 1,024 files (one encryption, blob and catalog line each); 0: every file its own
    #: artifact (at most 4 MiB: a pack is held in memory while it is read)
    pack_below: int = Field(1 << 20, ge=0, le=4 << 20)
    #: commands run in the claim's pods around its snapshot (`CHECKPOINT`, `fsfreeze`)
    hooks: list[Hook] = Field(default_factory=list)
