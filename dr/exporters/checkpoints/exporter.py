"""The `checkpoints` exporter: training checkpoints copied, complete and verified, to DR targets.

Where it sits: dr.backup calls export() with a sink, dr.restore calls restore() with a reader,
the restore planner and `dr status` ask the contract v2 questions; the work is in
dr.exporters.checkpoints, whose folders say what they hold:
  options, scanning    the plan's options; settled listing, run/step naming
  formats/   completeness and discovery of DCP, torch.save and safetensors (torch-free)
  places/    the place contract, directories and S3, retries as a wrapper, its conformance
  transfer/  parallel, bounded, hashed copying; server-side copies inside one object store
  copies/    the DR copy's layout, one copy (resumable), tiers, inventory, verifying
  exporting  one backup run              restoring  choose, verify, write back
  planning   destinations, any-tier needs, RTO bytes, RPO rows (contract v2)
  checking   the copies a snapshot records, checked as restore checks them (dr verify)
  status     RPO per run, verify every copy

What a snapshot holds: one small `checkpoint-copy` artifact per DR copy (where the copy is,
its manifest's digest, files and sizes); the bytes are in the copy, a plain checkpoint
directory a trainer loads in place (docs/format.md section 19). Incomplete checkpoints are
never copied; each is a finding with its reasons.
"""

from __future__ import annotations

import time
from datetime import timedelta
from typing import Iterator

from dr.exporters.checkpoints.formats.discovery import discover as discover_candidates
from dr.exporters.checkpoints import planning
from dr.exporters.checkpoints.checking import verify_recorded
from dr.exporters.checkpoints.deploying import run_needs
from dr.exporters.checkpoints.exporting import KIND, ExportRun
from dr.exporters.checkpoints.options import CheckpointsOptions, Tier
from dr.kits.places.contract import Place
from dr.exporters.checkpoints.places.opening import open_place
from dr.kits.places.s3 import Sessions
from dr.exporters.checkpoints.restoring import REMAP_KEYS, restore_copies, restored_checkpoints
from dr.exporters.checkpoints.scanning import ListedTree
from dr.exporters.checkpoints.sharding import Executor, make_executor
from dr.exporters.checkpoints.status import CopyCheck, RunRPO, rpo_report, verify_copies
from dr.exporters.checkpoints.transfer.transferring import Transfer
from dr.contract import (AnyOf, ArtifactSink, CheckpointSave, CheckpointSaves, ContentReader, CopyReport, DeployNeeds,
                         Destination, Discovered, DrillComparison, ExportContext, Exporter, Ordering, OrderingRule,
                         Outcome, OutsideCopies, Planning, RemapKind, RestoreOption, RestoreRequest, RestoredContent,
                         Rewriter, RpoRow, RtoEstimates, RunNeeds, Sizing)
from dr.model.artifacts import Artifact

__all__ = ["CheckpointsExporter", "CopyCheck", "KIND", "REMAP_KEYS", "RunRPO", "rpo_report", "verify_copies"]


class CheckpointsExporter(Exporter, Planning, OutsideCopies, CheckpointSaves, DeployNeeds, RtoEstimates,
                          DrillComparison):
    type_name = "checkpoints"
    summary = ("Training checkpoints on S3 or shared filesystems: complete ones copied, verified and "
               "loadable in place, to tiered DR targets")
    contract_version = 2
    sizing = Sizing(232, "Checkpoint DR copies, across endpoints at three shard sizes (peak of the "
                         "256 MB-shard rounds)")
    Options = CheckpointsOptions
    # the checkpoints step writes the checkpoint under the new bucket (its destination)
    remap_kinds = (RemapKind("bucket", frozenset({"bucket", "path"}), "old: the source root "
                             "(s3://bucket/prefix or a directory); new: where the restore writes instead"),)
    origin_kinds = frozenset({"bucket", "path"})
    ordering = Ordering(frozenset({"checkpoints"}), (OrderingRule(
        "role:checkpoints", "@workloads",
        "checkpoints before training jobs: a job Kueue admits resumes from the newest checkpoint "
        "it finds; if it is not back yet the job starts again from step 0, burning GPU hours, and "
        "its keep-last rotation can delete older checkpoints"),))
    restore_options = (
        RestoreOption("run", "RUN", "the training run to restore", "run"),
        RestoreOption("step", "N|latest", "the step to restore (default latest)", "step"),
    )

    def __init__(self, context: ExportContext) -> None:
        super().__init__(context)
        #: time and sleep, replaceable by tests (settle windows, upload ages)
        self.clock = time.time
        self.sleep = time.sleep
        self._roots: list[Place] | None = None
        self._tiers: dict[str, Place] = {}
        self._transfers: dict[tuple[int, str], Transfer] = {}
        self._sessions = Sessions()
        #: runs the shards of a sharded copy (options.shards); replaceable by tests
        self.executor: Executor | None = None

    # -- places -----------------------------------------------------------------------------
    def open(self, location) -> Place:
        """A place the plan or a record names, sharing this run's S3 sessions."""
        return open_place(location, self.context.base_dir, self._sessions)

    def roots(self) -> list[Place]:
        if self._roots is None:
            self._roots = [self.open(r) for r in self.options.roots]
        return self._roots

    def tier_place(self, tier: Tier) -> Place:
        if tier.name not in self._tiers:
            self._tiers[tier.name] = self.open(tier.to)
        return self._tiers[tier.name]

    def transfer(self, root: int, tier: Tier) -> Transfer:
        """One copier per (root, tier): server-side when both are the same object store."""
        key = (root, tier.name)
        if key not in self._transfers:
            o = self.options
            same = o.server_side_copy and tier.to is not None and o.roots[root].same_store_as(tier.to)
            self._transfers[key] = Transfer(self.roots()[root], self.tier_place(tier),
                                            part_size=o.part_size, max_buffer=o.max_buffer_mib << 20,
                                            parallel_files=o.parallel_files, server_side=same)
        return self._transfers[key]

    def shard_executor(self) -> Executor:
        if self.executor is None:
            self.executor = make_executor(self.options.shards, self.context.base_dir)
        return self.executor

    def close(self) -> None:
        for transfer in self._transfers.values():
            transfer.close()
        self._transfers.clear()

    # -- the contract -----------------------------------------------------------------------
    def discover(self) -> Iterator[Discovered]:
        """Every checkpoint-looking directory or file under the roots (one listing each; no
        content read, completeness not judged)."""
        for place in self.roots():
            tree = ListedTree(place, list(place.list_files("")))
            for cand in discover_candidates(tree, self.options.marker_names()):
                yield Discovered("checkpoint", place.url_of(cand.path), cand.kind)

    def export(self, sink: ArtifactSink) -> None:
        try:
            ExportRun(self, sink).execute()
        finally:
            self.close()

    def restore(self, artifacts: list[Artifact], reader: ContentReader,
                request: RestoreRequest) -> Iterator[Outcome]:
        yield from restore_copies(self, artifacts, reader, request)

    # -- contract v2: planning and status -----------------------------------------------------
    def run_needs(self) -> RunNeeds:
        return run_needs(self.options, self.context.base_dir)

    def destinations(self, artifacts: list[Artifact], rewrite: Rewriter) -> list[Destination]:
        return planning.default_destinations(self, artifacts, rewrite)

    def restore_needs(self, artifacts: list[Artifact]) -> list[AnyOf]:
        return planning.any_tier_needs(artifacts)

    def restore_bytes(self, artifacts: list[Artifact]) -> dict[str, int]:
        return planning.restore_bytes(artifacts)

    def rpo_report(self, objective: timedelta | None, read_data: bool = False) -> list[RpoRow]:
        return planning.rpo_rows(self, objective, read_data)

    def verify_copies(self, artifacts: list[Artifact], reader: ContentReader, read_data: bool) -> list[CopyReport]:
        return verify_recorded(self, artifacts, reader, read_data)

    def checkpoint_saves(self, artifacts: list[Artifact]) -> list[CheckpointSave]:
        return planning.checkpoint_saves(artifacts, tuple(t.name for t in self.options.effective_tiers()))

    def restored_content(self, artifacts: list[Artifact], reader: ContentReader,
                         request: RestoreRequest) -> Iterator[RestoredContent]:
        """Each restored checkpoint's files, read back and hashed, against its copy's manifest."""
        return restored_checkpoints(self, artifacts, reader, request)

    # -- beyond the contract ----------------------------------------------------------------
    def rpo(self, now: float | None = None) -> list[RunRPO]:
        return rpo_report(self, now=now)

    def verify(self, read_data: bool = True) -> list[CopyCheck]:
        return verify_copies(self, read_data=read_data)
