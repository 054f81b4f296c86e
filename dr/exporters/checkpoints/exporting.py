"""One backup run of the `checkpoints` exporter: scan, report, copy per tier, prune, record.

Why the snapshot holds a small record and not the checkpoint: a checkpoint is tens of GB and
must be loadable in place by the trainer, so its bytes go to a plain DR copy (copies.py); the
snapshot's artifact (kind `checkpoint-copy`) records where that copy is, its manifest's
digest and its files, the source it protects (a dependency, and meta `provides`, so the audit
treats the source bucket as remapped by the copy) and the copy's location (a dependency of
kind `checkpoint-copy`). Every complete copy a tier holds is recorded in every snapshot; an
unchanged one (same manifest digest) reuses the previous record without reading anything.

Order of work in a run: settled scan of the roots; findings for what is incomplete or
unnamed; source multipart leftovers; then for each tier: copy what the tier selects (newest
first; interrupted uploads are resumed), prune beyond keep_last, then sweep what is left over
(stale uploads, files of no copy), and record every complete copy.
"""

from __future__ import annotations

import bisect
import os
import time
from typing import TYPE_CHECKING

from dr.exporters.checkpoints.copies.layout import CopyError, CopyState, canonical, layout_for, remove
from dr.exporters.checkpoints.copies.copying import copy_checkpoint
from dr.exporters.checkpoints.copies.inventory import Inventory, old_uploads, stray_files, take_inventory
from dr.exporters.checkpoints.copies.locking import copy_lock
from dr.exporters.checkpoints.options import Tier
from dr.kits.places.contract import Place
from dr.kits.places.contract import SourceChanged
from dr.exporters.checkpoints.resuming import RESUMABLE, RELEASE, Resumability, of_checkpoint
from dr.exporters.checkpoints.scanning import Checkpoint, Scan, scan
from dr.exporters.checkpoints.sharding.coordinating import shardable, sharded_copy
from dr.exporters.checkpoints.sharding.executors import ExecutorError
from dr.exporters.checkpoints.copies.tiers import select, to_prune
from dr.contract import ArtifactSink
from dr.model.artifacts import Dependency, Sensitivity

if TYPE_CHECKING:
    from dr.exporters.checkpoints import CheckpointsExporter

KIND = "checkpoint-copy"
RUNBOOKS = {"not-resumable": "runbooks/checkpoint-not-resumable.md",
            "unversioned": "runbooks/checkpoint-unversioned.md"}
RECORD_FORMAT = "dr-checkpoint-copy-record"


def scan_roots(exporter: "CheckpointsExporter", settle_seconds: float | None = None) -> Scan:
    o = exporter.options
    return scan(exporter.roots(), run_pattern=o.run_pattern, markers=o.marker_rules(),
                marker_names=o.marker_names(), sleep=exporter.sleep,
                settle_seconds=o.settle_seconds if settle_seconds is None else settle_seconds)


class ExportRun:
    def __init__(self, exporter: "CheckpointsExporter", sink: ArtifactSink) -> None:
        self.x, self.sink, self.o, self.ctx = exporter, sink, exporter.options, exporter.context
        self.now = exporter.clock()
        self.found = Scan()
        self._resume: dict[str, Resumability] = {}
        self._complete: dict[str, Checkpoint] = {}
        self._runs: dict[str, list[Checkpoint]] = {}

    def execute(self) -> None:
        found = self.found = scan_roots(self.x)
        self._complete = {ck.path: ck for ck in found.checkpoints if ck.complete}
        self._runs = {run: [ck for ck in cks if ck.complete] for run, cks in found.runs().items()}
        self._missing_roots()
        self._report(found)
        self._resume_findings(found)
        self._source_uploads(found)
        for tier in self.o.effective_tiers():
            try:
                self._tier(tier, found)
            except Exception as exc:  # one unreachable target must not cost the other tiers
                self.ctx.finding("error", "checkpoint-tier-failed", f"tier {tier.name}: "
                                 f"{type(exc).__name__}: {exc}", tier=tier.name)

    # -- the source -------------------------------------------------------------------------
    def _missing_roots(self) -> None:
        """A root directory that does not exist lists nothing, like one with no checkpoints yet;
        unreported, a misspelt root would back up nothing, run after run, and look healthy."""
        for place in self.x.roots():
            if not place.is_s3 and not os.path.isdir(place.url):
                self.ctx.finding("error", "checkpoint-root-missing", f"{place.url}: the configured root is not "
                                 "a directory: nothing under it is backed up", root=place.url)

    def _report(self, found: Scan) -> None:
        for s in found.skipped:
            self.ctx.finding("warning", "checkpoint-unnamed", f"{self.x.roots()[s.root].url_of(s.path)}: "
                             f"not backed up: {s.reason}", path=s.path)
        for run, cks in found.runs().items():
            for ck in cks:
                if ck.complete:
                    continue
                busy = ck is cks[-1] and all(r.startswith(("still being written", "multipart upload"))
                                             for r in ck.reasons)
                self.ctx.finding("info" if busy else "warning",
                                 "checkpoint-in-progress" if busy else "checkpoint-incomplete",
                                 f"{ck.url}: not copied: {'; '.join(ck.reasons)}",
                                 run=run, step=ck.step, reasons=list(ck.reasons))

    # -- check 1 of docs/readiness.md: can the run continue from its newest checkpoint? -----
    def resumability(self, ck: Checkpoint) -> Resumability:
        if ck.path not in self._resume:
            role, requires = self.o.resume.for_run(ck.run)
            self._resume[ck.path] = of_checkpoint(ck, role, requires, self.o.resume.part_globs())
        return self._resume[ck.path]

    def _resume_findings(self, found: Scan) -> None:
        """Judged on the newest complete checkpoint of each run: the one a restarted job resumes
        from (older ones are judged too, into their records' meta)."""
        for run, cks in found.runs().items():
            done = [ck for ck in cks if ck.complete]
            if not done:
                continue
            ck, r = done[-1], self.resumability(done[-1])
            # category readiness: `dr audit --readiness` lists it with its runbook (docs/readiness.md)
            facts = {"run": run, "step": ck.step, "object": ck.url, "category": "readiness",
                     "check": "training-state", "runbook": RUNBOOKS["not-resumable"]}
            if r.verdict not in (RESUMABLE, RELEASE):
                have = ", ".join(f"{p} ({n})" for p, n in sorted(r.found.items())) or "nothing recognised"
                self.ctx.finding("warning", "checkpoint-not-resumable",
                                 f"{ck.url}: {r.verdict}: missing {', '.join(r.missing)} (holds {have}); "
                                 "save the full training state, or declare the run `role: release` under "
                                 "the source's resume option", missing=r.missing, parts=r.found, **facts)
            if r.unversioned:
                self.ctx.finding("info", "checkpoint-unversioned",
                                 f"{ck.url}: carries no {', '.join(r.unversioned)} version (code: git SHA, "
                                 "image digest, config hash, data version): a restore cannot tell which "
                                 "code and data continue it", unversioned=r.unversioned,
                                 **{**facts, "runbook": RUNBOOKS["unversioned"]})

    def _save_facts(self, path: str) -> dict:
        """Record meta of a copy whose checkpoint is still at the source: its resume verdict, and
        when the save was written (first and last file) with the run's previous complete save,
        so `dr advise checkpoints` measures save cost and interval even on a thinned tier. (The
        verdict costs the index completeness read anyway, plus a ranged read per version value.)"""
        ck = self._complete.get(path)
        if ck is None:
            return {}  # gone at the source: a reused record keeps what was measured when it was there
        facts = {"resume": self.resumability(ck).to_meta(), "written_first": round(ck.first_written, 3),
                 "written_last": round(ck.time, 3)}
        prev = self._previous(ck)
        if prev is not None:  # left out when rotated away: a reused record keeps the one measured before
            facts["previous"] = {"step": prev.step, "written_last": round(prev.time, 3)}
        return facts

    def _previous(self, ck: Checkpoint) -> Checkpoint | None:
        done = self._runs.get(ck.run, [])  # oldest step first
        at = bisect.bisect_left([c.step for c in done], ck.step)
        return done[at - 1] if at > 0 else None

    def _source_uploads(self, found: Scan) -> None:
        for i, place in enumerate(self.x.roots()):
            uploads = found.uploads.get(i, [])
            for u in uploads:
                age = self.now - u.initiated
                old = age > self.o.abort_after_seconds
                what = f"multipart upload of {place.url_of(u.path)} pending for {age / 3600:.1f} h"
                if old and self.o.allow_source_cleanup:
                    place.abort(u)
                    self.ctx.finding("info", "checkpoint-multipart-aborted", f"{what}: aborted", path=u.path)
                else:
                    why = "older than abort_multipart_after; allow_source_cleanup is off" if old else "recent"
                    self.ctx.finding("warning" if old else "info", "checkpoint-multipart-pending",
                                     f"{what} ({why})", path=u.path)

    # -- one tier ---------------------------------------------------------------------------
    def _tier(self, tier: Tier, found: Scan) -> None:
        place = self.x.tier_place(tier)
        # another backup of this source may be copying into the same place (copies.locking)
        with copy_lock(place, self.ctx.source, f"dr backup (source {self.ctx.source}, tier {tier.name})") as lock:
            for warning in lock.warnings:
                self.ctx.log(f"tier {tier.name}: {warning}")
            self._tier_locked(tier, place, found)

    def _tier_locked(self, tier: Tier, place: Place, found: Scan) -> None:
        inv = take_inventory(place, self.ctx.source)
        self._report_damaged(tier, inv)
        held = inv.held()
        for run, cks in found.runs().items():
            for ck in select(tier, cks, held.get(run, []), self.o.milestone):
                self._copy(tier, place, ck, inv)
        self._prune(tier, place, inv)
        self._sweep(tier, place, inv, {ck.path for ck in found.checkpoints})
        for path, state in sorted(inv.copies.items()):
            if state.complete:
                self._record(tier, place, state)

    def _sweep(self, tier: Tier, place: Place, inv: Inventory, live: set[str]) -> None:
        """After the copies (which resumed what they could), stale uploads are leftovers."""
        _, stale = old_uploads(place, f"{self.ctx.source}/", self.o.abort_after_seconds, self.now)
        for u in stale:
            place.abort(u)
            self.ctx.log(f"tier {tier.name}: aborted a stale upload of {place.url_of(u.path)}")
        for f in stray_files(inv, live, self.o.abort_after_seconds, self.now):
            place.delete(f.path)
            self.ctx.log(f"tier {tier.name}: removed {place.url_of(f.path)} (part of no copy)")

    def _report_damaged(self, tier: Tier, inv: Inventory) -> None:
        for path, state in inv.copies.items():
            if not state.complete:
                self.ctx.finding("error", "checkpoint-copy-damaged", f"tier {tier.name}: {state.problem}",
                                 path=path)

    def _copy(self, tier: Tier, place: Place, ck: Checkpoint, inv: Inventory) -> None:
        layout = layout_for(self.ctx.source, ck.path, ck.is_dir)
        started = time.monotonic()
        transfer = self.x.transfer(ck.root, tier)
        try:
            if shardable(ck, self.o.shards, self.o.written_last):
                result = sharded_copy(ck, place, layout, transfer, tier.name, self.o.shards, self.x.shard_executor(),
                                      self.o.written_last, self.x.clock, self.ctx.log)
            else:
                result = copy_checkpoint(ck, place, layout, transfer, tier.name, self.o.written_last, self.x.clock)
        except (CopyError, SourceChanged, OSError, ExecutorError) as exc:
            self.ctx.finding("error", "checkpoint-copy-failed", f"tier {tier.name}: {ck.url}: {exc}",
                             run=ck.run, step=ck.step)
            return
        inv.copies[ck.path] = result.state
        s = result.stats
        self.sink.transferred(s.bytes_copied)
        self.ctx.log(f"tier {tier.name}: {ck.url} -> {place.url_of(layout.key)}: {s.files_copied} files "
                     f"({s.bytes_uploaded} bytes sent, {s.bytes_reused} reused, {s.server_side} server-side, "
                     f"{s.files_skipped} already done) in {time.monotonic() - started:.1f}s")

    def _prune(self, tier: Tier, place: Place, inv: Inventory) -> None:
        for run, held in inv.held().items():
            for h in to_prune(tier, held):
                layout = inv.layout(h.path)
                remove(place, layout, inv.paths_of(layout))
                del inv.copies[h.path]
                self.ctx.log(f"tier {tier.name}: pruned {place.url_of(layout.key)} (keep_last {tier.keep_last})")

    # -- the snapshot record ----------------------------------------------------------------
    def _record(self, tier: Tier, place: Place, state: CopyState) -> None:
        record = copy_record(tier.name, place, state)
        ck = record["checkpoint"]
        copy_url = record["copy"]
        kind = "bucket" if str(ck.get("source", "")).startswith("s3://") else "path"
        self.sink.write(
            KIND, f"{tier.name}/{ck['path']}", canonical(record),
            sensitivity=self.ctx.sensitivity or Sensitivity.INTERNAL,
            dependencies=[Dependency(kind, ck["source"], "the checkpoint's source: restore writes back there"),
                          Dependency(KIND, copy_url, f"DR copy, tier {tier.name}")],
            meta={"provides": [ck["source"]], "run": ck["run"], "step": ck["step"], "tier": tier.name,
                  "copy": copy_url, "manifest_sha256": state.manifest_sha256,
                  "files": len(record["files"]), "bytes": record["bytes"], **self._save_facts(ck["path"])},
            change_token=f"{state.manifest_sha256}:{copy_url}")


def copy_record(tier: str, place: Place, state: CopyState) -> dict:
    """What the snapshot keeps about a copy: enough to find, check and restore it."""
    files = state.files()
    layout = state.layout
    return {
        "format": RECORD_FORMAT, "version": 1, "tier": tier, "location": place.location(),
        "copy": place.url_of(layout.key),
        "layout": {"key": layout.key, "is_dir": layout.is_dir},
        "manifest": {"key": layout.manifest, "sha256": state.manifest_sha256},
        "marker": layout.marker, "checkpoint": state.manifest.get("checkpoint", {}),
        "files": files, "bytes": sum(f["size"] for f in files),
    }

