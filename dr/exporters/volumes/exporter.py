"""The VolumesExporter class: the contract's methods, wired to selection, movers and restore."""

from __future__ import annotations

import os
from typing import Iterator

from dr.contract import (ApiRead, ApiWrite, ArtifactSink, AuditDeclarations, ContentReader, Credential, DeployNeeds,
                         Destination, Discovered, Exporter, FindingCode, NoDestination, Ordering, OrderingRule, Outcome,
                         OutcomeStatus, OutsideCopies, Planning, RemapKind, RestoreOption, RestoreRequest, Rewriter, RunNeeds, Sizing)
from dr.exporters.volumes.cluster import Cluster, ClusterError
from dr.exporters.volumes.exporting import CLAIM_KIND, ENTRY_KINDS, ClaimBackup, entry_identity
from dr.exporters.volumes.options import VolumesOptions
from dr.exporters.volumes.packing import Pack, packs_of
from dr.exporters.volumes.selecting import Claim, claims
from dr.exporters.volumes.temporaries import SNAPSHOTS, ClaimGone, Run, VolumeError
from dr.kits.kubeconfigs import parse_destination
from dr.model.artifacts import Artifact

DEFAULT_CLASS = "snapshot.storage.kubernetes.io/is-default-class"
COPY_FAILED = FindingCode("volumes-copy-failed", "A claim's volume data could not be copied",
                          "read the finding's cause (snapshot, mover pod, stream), fix it, and run the backup again")
UNREADABLE = FindingCode("volumes-unreadable", "Files of a volume could not be read: they are not in the backup",
                         "make the files readable to the mover (it reads as root with DAC_READ_SEARCH), or exclude them")
LIVE_COPY = FindingCode("volumes-live-copy", "A volume was copied live, without a snapshot: it may be inconsistent",
                        "give the claim's CSI driver a VolumeSnapshotClass, or quiesce the workload during the backup")
HOOK_FAILED = FindingCode("volumes-hook-failed", "A pre or post hook failed in a claim's pod",
                          "run the hook's command in the pod by hand (kubectl exec), fix it or its timeout_seconds; "
                          "a failed post hook may have left the workload frozen")


class VolumesExporter(Exporter, Planning, AuditDeclarations, OutsideCopies, DeployNeeds):
    type_name = "volumes"
    summary = "PersistentVolumeClaims' files, through a CSI snapshot and a mover Job, restored before their workloads"
    Options = VolumesOptions
    contract_version = 2
    sizing = Sizing(256, "volume copy through the mover: dr vs restic, 10,625 files of 1 MB")
    finding_codes = (COPY_FAILED, UNREADABLE, LIVE_COPY, HOOK_FAILED)
    reads_plan_dependencies = True  # the claims' volume-data references the kubernetes source recorded
    ordering = Ordering(frozenset({"volume-data"}), (OrderingRule(
        "role:volume-data", "@workloads",
        "a volume is filled before the workload that mounts it is created: a StatefulSet started on an "
        "empty claim initializes a new database there, and the restore's files would land beside it", True),))
    remap_kinds = (
        RemapKind("namespace", frozenset({"volume-data"}), "old: a namespace; new: the namespace to restore "
                  "its claims into", request_prefix="namespace:", rewrite=lambda ref, old, new: _namespaced(ref, old, new)),
        RemapKind("storage-class", frozenset({"storage-class"}), "old: a StorageClass name; new: the StorageClass "
                  "the recovery cluster has", request_prefix="storage-class:",
                  rewrite=lambda ref, old, new: new if ref == old else None),
    )
    restore_options = (
        RestoreOption("namespace-map", "OLD=NEW", "restore claims of namespace OLD into NEW (repeatable)",
                      "namespace:", pairs=True),
        RestoreOption("storage-class-map", "OLD=NEW", "create claims of class OLD with class NEW (repeatable)",
                      "storage-class:", pairs=True),
    )

    # -- connecting ----------------------------------------------------------------------------
    def _kubeconfig(self) -> str | None:
        path = self.options.kubeconfig
        return os.path.join(self.context.base_dir, path) if path else None

    def _cluster(self, kubeconfig: str | None = None, context: str | None = None) -> Cluster:
        return Cluster(kubeconfig or self._kubeconfig(), context or self.options.context)

    def _run(self, cluster: Cluster, image: str | None = None) -> Run:
        return Run(cluster, self.context.source, image or self.options.image, self.context.log,
                   job_seconds=self.options.job_timeout_seconds, start_seconds=self.options.start_timeout_seconds)

    def snapshot_class(self, claim: Claim) -> str | None:
        """The VolumeSnapshotClass for the claim's driver: the option's, the default, or the only one."""
        found = self.__dict__.get("_snapshot_classes")
        if found is None:
            try:
                found = list(self._cluster_now.items(f"{SNAPSHOTS}/volumesnapshotclasses"))
            except ClusterError as exc:
                if exc.status != 404:
                    raise
                found = []  # the cluster serves no snapshots
            self.__dict__["_snapshot_classes"] = found
        mine = [c for c in found if c.get("driver") == claim.provisioner]
        if self.options.snapshot_class:
            return self.options.snapshot_class if any(
                c["metadata"]["name"] == self.options.snapshot_class for c in mine) else None
        default = [c for c in mine if (c["metadata"].get("annotations") or {}).get(DEFAULT_CLASS) == "true"]
        chosen = default or (mine if len(mine) == 1 else [])
        return chosen[0]["metadata"]["name"] if chosen else None

    # -- discover / export ---------------------------------------------------------------------
    def discover(self) -> Iterator[Discovered]:
        """Each selected claim, and what its live volume holds (a read-only mover lists it)."""
        cluster = self._cluster_now = self._cluster()
        run = self._run(cluster)
        try:
            for claim in claims(cluster, self.options):
                if claim.skipped:
                    continue
                yield Discovered(CLAIM_KIND, claim.key, f"class {claim.storage_class or '(none)'}")
                mover = run.mover(claim.namespace, claim.name, write=False, for_claim=claim.key, node=claim.node)
                listing = ClaimBackup(self, cluster, run, None, claim)
                units, _ = packs_of(listing.entries(mover), self.options.pack_below)
                for unit in units:  # a packed file is a member of its pack, at its change token
                    packed = isinstance(unit, Pack)
                    for entry in unit.members if packed else [unit]:
                        yield Discovered(ENTRY_KINDS[entry.kind], entry_identity(claim.key, entry.path),
                                         f"{entry.size} bytes" if entry.kind == "file" else "",
                                         version=entry.change_token if packed else "")
                listing.exit(mover)
                run.remove_for(claim.key)
        finally:
            run.remove_for(None)

    def export(self, sink: ArtifactSink) -> None:
        cluster = self._cluster_now = self._cluster()
        run = self._run(cluster)
        removed = run.remove_stale()
        if removed:
            self.context.log(f"removed {removed} temporary objects an earlier run left")
        try:
            self._export_claims(cluster, run, sink)
        finally:
            run.remove_for(None)

    def _export_claims(self, cluster: Cluster, run: Run, sink: ArtifactSink) -> None:
        found = claims(cluster, self.options)
        for claim in found:
            if claim.skipped:
                self.context.log(f"skipped claim {claim.key}: {claim.skipped}")
                self.context.finding("info", "volumes-claim-skipped", f"{claim.key}: not copied: {claim.skipped}",
                                     claim=claim.key)
        for claim in (c for c in found if not c.skipped):
            try:
                tally = ClaimBackup(self, cluster, run, sink, claim).run_copy()
            except ClaimGone as exc:
                self.context.log(f"skipped claim {exc}")
                self.context.finding("info", "volumes-claim-skipped", f"{exc}: not copied", claim=claim.key)
                continue
            except (VolumeError, ClusterError, OSError, ValueError) as exc:
                self.context.finding("error", COPY_FAILED.code, f"{claim.key}: {exc}", claim=claim.key)
                continue
            finally:
                run.remove_for(claim.key)
            self.context.log(f"claim {claim.key}: {tally.files} files, {tally.bytes} bytes, {tally.read} read "
                             f"(the others unchanged), {len(tally.unreadable)} unreadable")

    # -- restore --------------------------------------------------------------------------------
    def destinations(self, artifacts: list[Artifact], rewrite: Rewriter) -> list[Destination]:
        """None by default: restoring into the cluster it came from is never assumed."""
        name = self.context.source
        raise NoDestination(f"no destination cluster: name one with --to {name}=CONTEXT or "
                            f"--to {name}=KUBECONFIG:CONTEXT")

    def check_artifacts(self, artifacts: list[Artifact]) -> list[str]:
        from dr.exporters.volumes.restoring import catalog_problems

        return catalog_problems(artifacts)

    def restore(self, artifacts: list[Artifact], reader: ContentReader,
                request: RestoreRequest) -> Iterator[Outcome]:
        from dr.exporters.volumes.restoring import restore_all

        kubeconfig, context = parse_destination(request.to, self._kubeconfig()) if request.to else (self._kubeconfig(), None)
        try:
            cluster = self._cluster(kubeconfig, context)
        except ClusterError as exc:
            yield from (Outcome(a.identity, OutcomeStatus.FAILED, str(exc)) for a in artifacts)
            return
        image = _remapped_image(self.options.image, request.remap)
        run = self._run(cluster, image)
        if not request.dry_run:
            run.remove_stale()
        try:
            yield from restore_all(cluster, run, artifacts, reader, request)
        finally:
            run.remove_for(None)

    # -- deploy -----------------------------------------------------------------------------
    def run_needs(self) -> RunNeeds:
        needs = RunNeeds()
        namespaces = tuple(sorted(self.options.namespaces))
        why = "the claims to copy, the pods that mount them, their classes"
        needs.api_reads += [ApiRead("", ("persistentvolumeclaims", "pods"), namespaces, why),
                            ApiRead("storage.k8s.io", ("storageclasses",), (), why),
                            ApiRead("snapshot.storage.k8s.io", ("volumesnapshotclasses",), (), why)]
        writes = (("", ("persistentvolumeclaims", "secrets"), ("create", "delete", "get", "list")),
                  ("batch", ("jobs",), ("create", "delete", "get", "list")),
                  ("snapshot.storage.k8s.io", ("volumesnapshots",), ("create", "delete", "get", "list")),
                  ("", ("pods/proxy",), ("get", "create", "update")))
        if self.options.hooks:  # the hooks' commands, in the claims' pods
            writes += (("", ("pods/exec",), ("create", "get")),)
        for namespace in namespaces:
            needs.api_writes += [ApiWrite(g, r, v, namespace, "the temporary snapshot, claim and mover Job of "
                                          "each copy, and the mover's port") for g, r, v in writes]
        if not namespaces:
            needs.notes.append("the volumes source creates snapshots, claims and mover Jobs in the namespace of "
                               "every claim it copies; with no `namespaces` option that is any namespace, which a "
                               "Role cannot grant: name the namespaces, or bind a ClusterRole yourself")
        if self.options.kubeconfig:
            needs.credentials.append(Credential(f"kubeconfig-{self.context.source}",
                                                "the kubeconfig of the cluster whose volumes this source copies",
                                                path=os.path.normpath(os.path.join(self.context.base_dir,
                                                                                   self.options.kubeconfig))))
        else:
            needs.endpoints.append("https://kubernetes.default.svc:443")
        return needs


def _remapped_image(image: str, remap: dict[str, str]) -> str:
    for key, new in remap.items():
        if key.startswith("image-registry:"):
            old = key[len("image-registry:"):]
            if image.startswith(old.rstrip("/") + "/"):
                return new.rstrip("/") + image[len(old.rstrip("/")):]
    return image


def _namespaced(reference: str, old: str, new: str) -> str | None:
    """A claim's reference in namespace `old`, moved to `new` (its API URL, or volume://where/ns/name)."""
    for before, after in ((f"/namespaces/{old}/", f"/namespaces/{new}/"),):
        if before in reference:
            return reference.replace(before, after, 1)
    if reference.startswith("volume://"):
        where, _, rest = reference[len("volume://"):].partition("/")
        namespace, _, name = rest.partition("/")
        return f"volume://{where}/{new}/{name}" if namespace == old else None
    return None
