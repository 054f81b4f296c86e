"""Making the DR copy of one complete checkpoint, resumably, in the order that keeps it honest.

Order (docs/format.md section 19): the checkpoint's data files, in parallel; then its index
and marker files (`.metadata`, `*.index.json`, the plan's markers), so that even a trainer
scanning the DR target never takes a half-copied directory for a committed checkpoint; then
`dr-manifest.json`; then `DR-COMPLETE`, last; then the journal entries are removed.

Resuming: each file gets a write-once journal entry (size, SHA-256, the source version it
was copied from) once its bytes are stored and verified and just BEFORE it is made visible
(CompleteMultipartUpload, the PUT, the rename). A rerun skips every file whose entry matches
the source's current version and whose copy is stored with that size, so a completed file is
never uploaded twice; a file interrupted mid-way continues from its stored parts (s3writing's
pending multipart upload, or a directory's partial file: places.LocalWriter);
a file visible without a valid entry can only be stale, and is deleted before it is copied.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import time
from dataclasses import dataclass, field
from typing import Callable

from dr.exporters.checkpoints.copies.layout import (CopyError, CopyState, Layout, build_manifest, canonical,
                                               completed_files, journal_entry, marker_bytes, read_copy, utc)
from dr.kits.places.contract import Place
from dr.exporters.checkpoints.scanning import Checkpoint
from dr.exporters.checkpoints.transfer.transferring import FileJob, Transfer
from dr.kits.places.files import FileStat


@dataclass
class CopyStats:
    files_copied: int = 0
    files_skipped: int = 0  # finished by an earlier, interrupted run
    bytes_uploaded: int = 0
    bytes_reused: int = 0  # parts kept from an interrupted upload
    server_side: int = 0  # files copied inside the object store
    bytes_copied: int = 0  # the copied files' sizes, however they were copied
    uploaded_paths: list[str] = field(default_factory=list)


@dataclass
class CopyResult:
    state: CopyState
    created: bool  # False when the copy was already complete
    stats: CopyStats


def copy_checkpoint(ck: Checkpoint, dst: Place, layout: Layout, transfer: Transfer, tier: str,
                    is_last: Callable[[str], bool], now: Callable[[], float] = time.time) -> CopyResult:
    """Copy `ck` to `layout` in `dst` unless a complete copy is already there."""
    existing = read_copy(dst, layout)
    if existing.complete:
        return CopyResult(existing, False, CopyStats())
    listing = {f.path: f for f in dst.list_files(layout.base) if layout.owns(f.path) or layout.is_dir}
    wanted = {rel: (st.size, ck.place.version(st.path)) for rel, st in ck.files.items()}
    digests = completed_files(dst, layout, listing, wanted)
    stats = CopyStats(files_skipped=len(digests))
    todo = [rel for rel in sorted(ck.files) if rel not in digests]
    for phase in ([r for r in todo if not is_last(r)], [r for r in todo if is_last(r)]):
        copy_files(ck, dst, layout, transfer, phase, wanted, digests, stats, listing)
    return CopyResult(publish_copy(ck, dst, layout, digests, tier, now), True, stats)


def publish_copy(ck: Checkpoint, dst: Place, layout: Layout, digests: dict[str, str], tier: str,
                 now: Callable[[], float]) -> CopyState:
    """Every file is stored: the manifest, then the marker, then the journal goes."""
    files = {rel: (ck.files[rel].size, digests[rel]) for rel in ck.files}
    state = _publish(dst, layout, _manifest(ck, files, tier, now()), now)
    _drop_journal(dst, layout)
    return state


def copy_files(ck: Checkpoint, dst: Place, layout: Layout, transfer: Transfer, rels: list[str],
                wanted: dict[str, tuple[int, str]], digests: dict[str, str], stats: CopyStats,
                listing: dict[str, FileStat]) -> None:
    if not rels:
        return
    by_src = {ck.files[rel].path: rel for rel in rels}

    def record(job: FileJob, sha256: str) -> None:
        """Journal a file just before it becomes visible (see Transfer.run)."""
        rel = by_src[job.src_path]
        entry = journal_entry(rel, job.size, sha256, wanted[rel][1])
        key = f"{layout.journal}{rel}.json"
        if not dst.put(key, entry, create_only=True):  # a stale entry (older source version)
            dst.delete(key)
            dst.put(key, entry, create_only=True)

    for rel in rels:  # a file stored without a valid entry is stale: never take it for ours
        if layout.file(rel) in listing:
            dst.delete(layout.file(rel))
    jobs = [FileJob(ck.files[rel].path, layout.file(rel), ck.files[rel].size, expect=ck.files[rel])
            for rel in rels]
    done, failed = transfer.run(jobs, before_visible=record)
    for d in done:
        digests[by_src[d.job.src_path]] = d.sha256
        stats.files_copied += 1
        stats.bytes_uploaded += d.uploaded
        stats.bytes_reused += d.reused
        stats.server_side += d.server_side
        stats.bytes_copied += d.job.size
        stats.uploaded_paths.append(d.job.dst_path)
    if failed:
        names = ", ".join(f"{by_src[p]} ({type(e).__name__}: {e})" for p, e in sorted(failed.items())[:5])
        raise CopyError(f"{len(failed)} file(s) of {ck.url} not copied: {names}")


def _manifest(ck: Checkpoint, files: dict[str, tuple[int, str]], tier: str, now: float) -> bytes:
    checkpoint = {"kind": ck.kind, "run": ck.run, "step": ck.step, "time": utc(ck.time),
                  "source": ck.url, "path": ck.path}
    return build_manifest(checkpoint, files, tier, now)


def _publish(dst: Place, layout: Layout, manifest: bytes, now: Callable[[], float]) -> CopyState:
    """Manifest, then the marker naming its digest. A manifest left by a run that died before
    its marker is kept when it lists the same files, replaced otherwise (no marker: it was
    never part of a copy)."""
    if not dst.put(layout.manifest, manifest, create_only=True):
        stored = dst.get(layout.manifest) or b""
        if _files_of(stored) == _files_of(manifest):
            manifest = stored
        else:
            dst.delete(layout.manifest)
            if not dst.put(layout.manifest, manifest, create_only=True):
                raise CopyError(f"{dst.url_of(layout.manifest)} is being written by someone else")
    sha = hashlib.sha256(manifest).hexdigest()
    if not dst.put(layout.marker, marker_bytes(sha, now()), create_only=True):
        state = read_copy(dst, layout)
        if state.complete and state.manifest_sha256 == sha:
            return state
        raise CopyError(f"{dst.url_of(layout.marker)} exists and names another manifest: {state.problem}")
    return CopyState(layout, json.loads(manifest), sha, "")


def _files_of(raw: bytes) -> bytes:
    try:
        return canonical(json.loads(raw).get("files"))
    except (ValueError, AttributeError):
        return b""


def _drop_journal(dst: Place, layout: Layout) -> None:
    """The manifest now holds everything the journal did."""
    journal = layout.journal.rstrip("/")
    dst.delete_many([f.path for f in dst.list_files(journal)])
    if not dst.is_s3:  # a directory keeps the emptied folders (S3 has none): remove them too
        for folder, _, _ in sorted(os.walk(dst.url_of(journal)), reverse=True):
            with contextlib.suppress(OSError):
                os.rmdir(folder)
