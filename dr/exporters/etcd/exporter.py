"""The EtcdExporter class: the contract's methods, wired to the maintenance API and the file format."""

from __future__ import annotations

import filecmp
import os
from typing import Iterator

from dr.contract import (ArtifactSink, ContentReader, DeployNeeds, Destination, Discovered, DrillComparison, Exporter,
                         NoDestination, Ordering, OrderingRule, Outcome, OutcomeStatus, Planning, RestoreRequest,
                         RestoredContent, Rewriter, RunNeeds, Sizing)
from dr.exporters.etcd.deploying import run_needs
from dr.exporters.etcd.maintenance import Client, EtcdError, EtcdUnreachable, Tls
from dr.exporters.etcd.options import EtcdCluster, EtcdOptions
from dr.exporters.etcd.snapshots import SnapshotCorrupt, Verifying, check_stream
from dr.model.artifacts import Artifact, Sensitivity

KIND = "etcd-snapshot"
#: kept in every artifact's meta, said in the docs and in a finding of every backup
SAME_VERSION_ONLY = (
    "an etcd snapshot restores the whole API state of the cluster it came from, as it was at one "
    "revision: it suits rebuilding that control plane on the same etcd and Kubernetes versions, not "
    "migrating to another cluster or version (restore objects through the kubernetes exporter for that)")


class EtcdExporter(Exporter, Planning, DeployNeeds, DrillComparison):
    type_name = "etcd"
    summary = "etcd clusters (self-managed control planes): verified snapshots through the maintenance API"
    Options = EtcdOptions
    contract_version = 2
    sizing = Sizing(118, "etcd snapshot of 1.2 GB")
    ordering = Ordering(frozenset({"control-plane-state"}), (OrderingRule(
        "role:control-plane-state", "role:cluster-objects",
        "the API server's own store comes back first: objects applied through an API server whose "
        "etcd is then replaced by a snapshot would be lost"),))

    def run_needs(self) -> RunNeeds:
        return run_needs(self.options, self.context.base_dir, self.context.source)

    def destinations(self, artifacts: list[Artifact], rewrite: Rewriter) -> list[Destination]:
        """None by default: the snapshot files go where the operator rebuilds the control plane."""
        raise NoDestination(f"no folder for the snapshot files: name one with --to {self.context.source}=DIRECTORY")

    def _client(self, cluster: EtcdCluster) -> Client:
        def path(name: str | None) -> str | None:
            return os.path.join(self.context.base_dir, name) if name else None
        tls = Tls(path(cluster.ca_file), path(cluster.cert_file), path(cluster.key_file))
        return Client(cluster.endpoints, tls, self.options.timeout_seconds)

    # -- discover / export ---------------------------------------------------------------
    def discover(self) -> Iterator[Discovered]:
        for cluster in self.options.clusters:
            try:
                status = self._client(cluster).status()
                yield Discovered(KIND, cluster.name, f"etcd {status.get('version')}, revision "
                                 f"{status.get('header', {}).get('revision')}, {status.get('dbSize')} bytes")
            except (EtcdUnreachable, EtcdError) as exc:
                yield Discovered(KIND, cluster.name, f"unreachable: {exc}")

    def export(self, sink: ArtifactSink) -> None:
        """One verified snapshot per cluster; an unreachable cluster is an error finding, not the end."""
        for cluster in self.options.clusters:
            try:
                self._export_one(sink, cluster)
            except (EtcdUnreachable, EtcdError, SnapshotCorrupt) as exc:
                self.context.finding("error", "etcd-snapshot-failed", f"{cluster.name}: {exc}",
                                     cluster=cluster.name, endpoints=cluster.endpoints)

    def _export_one(self, sink: ArtifactSink, cluster: EtcdCluster) -> None:
        client = self._client(cluster)
        status, members = client.status(), client.members()
        header = status.get("header", {})
        meta = {"revision": int(header.get("revision", 0)), "raft_index": int(status.get("raftIndex", 0)),
                "etcd_version": status.get("version", ""), "cluster_id": header.get("cluster_id", ""),
                "member_id": header.get("member_id", ""), "endpoint": client.endpoint,
                "db_size": int(status.get("dbSize", 0)), "members": members, "restore_note": SAME_VERSION_ONLY}
        # Any write, compaction, lease or member change moves the raft index; a defragmentation
        # moves the database size. Taken before the snapshot, so a later snapshot only re-reads.
        token = "etcd:" + ":".join(str(meta[k]) for k in ("cluster_id", "member_id", "raft_index", "revision",
                                                          "db_size"))
        self.context.log(f"etcd {cluster.name}: revision {meta['revision']}, etcd {meta['etcd_version']}, "
                         f"{len(members)} members, from {client.endpoint}")

        def stream():
            pieces, close = client.snapshot()
            return Verifying(pieces, close)

        # etcd holds every Secret of the cluster: never below secret, whatever the plan says
        sink.write(KIND, cluster.name, stream, sensitivity=Sensitivity.SECRET, meta=meta, change_token=token)
        self.context.finding("info", "etcd-snapshot-same-version-only", f"{cluster.name}: {SAME_VERSION_ONLY}",
                             cluster=cluster.name, etcd_version=meta["etcd_version"])

    # -- restore -------------------------------------------------------------------------
    def restore(self, artifacts: list[Artifact], reader: ContentReader,
                request: RestoreRequest) -> Iterator[Outcome]:
        for artifact in artifacts:
            if artifact.kind != KIND:
                yield Outcome(artifact.identity, OutcomeStatus.SKIPPED, f"not an {KIND} artifact ({artifact.kind})")
            elif not request.to:
                yield Outcome(artifact.identity, OutcomeStatus.FAILED,
                              "--to DIRECTORY is required: the folder the snapshot file is written to")
            else:
                yield self._restore_one(artifact, reader, request, os.path.abspath(request.to))

    def restored_content(self, artifacts: list[Artifact], reader: ContentReader,
                         request: RestoreRequest) -> Iterator[RestoredContent]:
        """Each snapshot file holds the snapshot's bytes as backed up: dr drill checks them."""
        for artifact in artifacts:
            if artifact.kind == KIND and request.to:
                yield RestoredContent(artifact.identity,
                                      path=os.path.join(os.path.abspath(request.to), f"{artifact.identity}.db"))

    def _restore_one(self, artifact: Artifact, reader: ContentReader, request: RestoreRequest,
                     folder: str) -> Outcome:
        target = os.path.join(folder, f"{artifact.identity}.db")
        about = (f"revision {artifact.meta.get('revision')}, etcd {artifact.meta.get('etcd_version')}, "
                 f"{len(artifact.meta.get('members', []))} members")
        if request.dry_run:
            exists = " (replacing the file there)" if os.path.exists(target) else ""
            return Outcome(artifact.identity, OutcomeStatus.PLANNED, f"would write {target}{exists}: {about}")
        os.makedirs(folder, exist_ok=True)
        staging = target + ".dr-partial"
        try:
            with reader.open(artifact) as stream, open(staging, "wb") as out:
                size = check_stream(stream, out)
        except SnapshotCorrupt as exc:
            os.unlink(staging)
            return Outcome(artifact.identity, OutcomeStatus.FAILED, f"refused: {exc}")
        except BaseException:
            if os.path.exists(staging):
                os.unlink(staging)
            raise
        return self._place(artifact, staging, target, request.overwrite, f"{size} bytes, {about}")

    @staticmethod
    def _place(artifact: Artifact, staging: str, target: str, overwrite: bool, about: str) -> Outcome:
        if os.path.exists(target) and filecmp.cmp(staging, target, shallow=False):
            os.unlink(staging)
            return Outcome(artifact.identity, OutcomeStatus.UNCHANGED, f"{target} already holds this snapshot")
        if os.path.exists(target) and not overwrite:
            os.unlink(staging)
            return Outcome(artifact.identity, OutcomeStatus.CONFLICT,
                           f"{target} exists and differs; --overwrite replaces it")
        os.chmod(staging, 0o600)  # it holds every Secret of the cluster
        os.replace(staging, target)
        return Outcome(artifact.identity, OutcomeStatus.RESTORED,
                       f"wrote {target} ({about}), its sha256 checked; rebuild with `etcdutl snapshot restore "
                       f"{target} --data-dir NEW_DIR ...` (runbooks/etcd-control-plane.md)")
