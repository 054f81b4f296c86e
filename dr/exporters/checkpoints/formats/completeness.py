"""Decide, with reasons, whether a discovered checkpoint is complete (discovery.py finds them).

Why: a backup taken while a trainer writes, or after it died, must not record a checkpoint
that cannot be loaded. Each rule below catches one way a writer stops half-way; every failed
rule adds a reason, so an operator sees why a checkpoint was skipped, never just "incomplete".

DCP directory (torch 2.13 FileSystemWriter.finish writes the pickled index to `.metadata.tmp`,
fsyncs, deletes any old `.metadata`, then renames; with use_collectives=False each rank r
does the same with `__r.metadata.tmp` -> `__r.metadata`):
  - an index exists and parses (dcp_metadata.py, never executing the pickle);
  - no temporary index is left: with no final index the commit never happened; beside a
    final index it may be an OLD index whose shards a new save is overwriting;
  - every storage file it references exists and is at least max(offset+length) long;
  - rank-local indexes are numbered 0..N-1 without gaps;
  - no storage file is newer than its index (a later save over the same directory died
    after rewriting shards and before its own index: sizes can all still match).
Safetensors-index directory (HuggingFaceStorageWriter, HF save_pretrained): every
`*.safetensors.index.json` parses and every file its weight_map names exists.
Directory kinds: every .pt/.pth/.safetensors file inside passes its structural check.
Every kind: the caller's required markers are present (exact name or glob, optionally an
exact count: one per rank), and no file was added, removed or changed (size or mtime) between
two listings taken a settle window apart. Single files: see single_file.py.
"""

from __future__ import annotations

import fnmatch
import time
from dataclasses import dataclass, field
from typing import Callable, Iterable

from dr.exporters.checkpoints.formats.dcp_metadata import (
    DcpIndex,
    DcpMetadataError,
    parse_dcp_metadata,
    parse_safetensors_index,
)
from dr.exporters.checkpoints.formats.discovery import (
    DIR_KINDS,
    META,
    META_TMP,
    SAFETENSORS,
    ST_INDEX,
    TORCH_SAVE,
    Candidate,
    discover,
)
from dr.exporters.checkpoints.formats.single_file import check_safetensors, check_torch_zip
from dr.exporters.checkpoints.formats.tree import FileTree, listing, parent_of
from dr.kits.places.files import FileStat

__all__ = [
    "MarkerRule", "Completeness", "Candidate", "discover", "candidate_listing", "assess", "assess_settled",
]  # fmt: skip

_MAX_LISTED = 10  # reasons name at most this many files per rule, then count the rest
DEFAULT_SHARD_NEWER_SLACK = 2.0


@dataclass(frozen=True)
class MarkerRule:
    """A file the caller's plan requires beside the checkpoint (relative to its directory;
    for a single-file checkpoint, relative to the file's directory).

    pattern: exact name ("COMPLETE") or fnmatch glob ("rank_*.done").
    count:   None = at least one match; N = exactly N matches (one per rank).
    """

    pattern: str
    count: int | None = None


@dataclass(frozen=True)
class Completeness:
    """complete is True only when reasons is empty. files is the candidate's settled listing
    (keyed relative to its directory): exactly what a backup should copy, with the sizes and
    mtimes a copy can be checked against. notes are observations that do not block."""

    candidate: Candidate
    complete: bool
    reasons: tuple[str, ...]
    notes: tuple[str, ...] = ()
    indexes: dict[str, DcpIndex] = field(default_factory=dict)
    files: dict[str, FileStat] = field(default_factory=dict)


# ---- assessment -----------------------------------------------------------------------------


def candidate_listing(tree: FileTree, cand: Candidate) -> dict[str, FileStat]:
    """The files a candidate consists of, keyed relative to its directory. A single-file
    candidate lists its directory so that markers beside it are seen too."""
    if cand.kind in DIR_KINDS:
        return listing(tree, cand.path)
    return {k: v for k, v in listing(tree, parent_of(cand.path)).items() if "/" not in k}


def assess_settled(
    tree: FileTree,
    cand: Candidate,
    settle_seconds: float,
    markers: Iterable[MarkerRule] = (),
    sleep: Callable[[float], None] = time.sleep,
    *,
    shard_newer_slack: float | None = DEFAULT_SHARD_NEWER_SLACK,
) -> Completeness:
    """List, wait settle_seconds (tests pass a fake sleep), list again, then assess."""
    before = candidate_listing(tree, cand)
    sleep(settle_seconds)
    after = candidate_listing(tree, cand)
    return assess(tree, cand, before, after, markers, shard_newer_slack=shard_newer_slack)


def assess(
    tree: FileTree,
    cand: Candidate,
    before: dict[str, FileStat],
    after: dict[str, FileStat],
    markers: Iterable[MarkerRule] = (),
    *,
    shard_newer_slack: float | None = DEFAULT_SHARD_NEWER_SLACK,
) -> Completeness:
    """Judge `cand` from two listings (candidate_listing) taken a settle window apart.

    shard_newer_slack: seconds a DCP storage file may be newer than its index (clock skew
    between hosts on a shared filesystem); None turns the rule off, for checkpoints copied
    by tools that do not keep mtimes.
    """
    own = _own_files(cand, after)
    reasons = _settle_reasons(_own_files(cand, before), own)
    rules = list(markers) + [MarkerRule(m) for m in cand.markers]
    reasons += _marker_reasons(after, rules)
    notes: list[str] = []
    indexes: dict[str, DcpIndex] = {}
    if cand.kind == "dcp":
        reasons += _dcp_reasons(tree, cand.path, after, indexes, notes)
        reasons += _rewritten_after_index(after, indexes, shard_newer_slack)
    elif cand.kind == "safetensors-index":
        reasons += _st_index_reasons(tree, cand.path, after, indexes)
    if cand.kind in DIR_KINDS:
        reasons += _contained_file_reasons(tree, after)
    else:
        reasons += _single_file_reasons(tree, _name(cand), after)
    if not own and not reasons:
        reasons.append("no files found")
    return Completeness(cand, not reasons, tuple(reasons), tuple(notes), indexes, own)


def _own_files(cand: Candidate, files: dict[str, FileStat]) -> dict[str, FileStat]:
    """A directory candidate is all of its files; a single file is itself alone (a sibling
    checkpoint being written next to it must not make it look unsettled)."""
    if cand.kind in DIR_KINDS:
        return dict(files)
    return {k: v for k, v in files.items() if k == _name(cand)}


def _name(cand: Candidate) -> str:
    return cand.path.rsplit("/", 1)[-1]


def _settle_reasons(before: dict[str, FileStat], after: dict[str, FileStat]) -> list[str]:
    changed = sorted(
        k for k in before.keys() | after.keys()
        if k not in before or k not in after
        or (before[k].size, before[k].mtime_ns) != (after[k].size, after[k].mtime_ns)
    )  # fmt: skip
    if not changed:
        return []
    details = [_change(k, before.get(k), after.get(k)) for k in changed]
    return [f"still being written: changed during the settle window: {_few(details)}"]


def _change(name: str, old: FileStat | None, new: FileStat | None) -> str:
    if old is None:
        return f"{name} appeared"
    if new is None:
        return f"{name} disappeared"
    return f"{name} size {old.size}->{new.size}" if old.size != new.size else f"{name} mtime changed"


def _marker_reasons(files: dict[str, FileStat], rules: list[MarkerRule]) -> list[str]:
    reasons = []
    for rule in rules:
        n = len(fnmatch.filter(files, rule.pattern))
        if rule.count is None and n == 0:
            reasons.append(f"required marker {rule.pattern!r} is missing")
        elif rule.count is not None and n != rule.count:
            reasons.append(f"required marker {rule.pattern!r}: {n} present, {rule.count} required")
    return reasons


def _dcp_reasons(
    tree: FileTree,
    prefix: str,
    files: dict[str, FileStat],
    indexes: dict[str, DcpIndex],
    notes: list[str],
) -> list[str]:
    metas = sorted(n for n in files if META.match(n))
    reasons = [_tmp_reason(t, metas) for t in sorted(n for n in files if META_TMP.match(n))]
    if not metas:
        return reasons + [".metadata missing: the index is written last, so this save never committed"]
    reasons += _rank_gap_reasons(metas)
    for meta in metas:
        try:
            data = tree.read(_join(prefix, meta), 0, files[meta].size)
            indexes[meta] = parse_dcp_metadata(data)
        except (DcpMetadataError, OSError) as exc:
            reasons.append(f"{meta} unreadable: {exc}")
            continue
        reasons += _storage_reasons(meta, indexes[meta], files)
    referenced = {p for ix in indexes.values() for p in ix.required_sizes}
    stray = sorted(n for n in files if n.endswith(".distcp") and n not in referenced)
    if stray and len(indexes) == len(metas):
        notes.append(f"files no index references (left by another save?): {_few(stray)}")
    return reasons


def _rewritten_after_index(
    files: dict[str, FileStat], indexes: dict[str, DcpIndex], slack: float | None
) -> list[str]:
    """DCP writes the index after fsyncing every shard, so a shard newer than its index was
    rewritten after the commit: a save over this directory died before writing its own index
    (shards can be a mix of two saves while every size still matches)."""
    if slack is None:
        return []
    reasons = []
    for meta, ix in indexes.items():
        limit = files[meta].mtime_ns + int(slack * 1e9)
        newer = sorted(p for p in ix.required_sizes if p in files and files[p].mtime_ns > limit)
        if newer:
            reasons.append(f"{meta} is older than files it indexes (rewritten after the commit by "
                           f"a save that did not finish?): {_few(newer)}")  # fmt: skip
    return reasons


def _tmp_reason(tmp: str, metas: list[str]) -> str:
    final = tmp.removesuffix(".tmp")
    if final in metas:
        return (f"temporary index {tmp} left beside {final}: a newer save died before its "
                f"rename, so {final} may describe shards that save overwrote")  # fmt: skip
    return f"temporary index {tmp} left without {final}: the writer died before the final rename"


def _rank_gap_reasons(metas: list[str]) -> list[str]:
    ranks = sorted(int(m.group(1)) for m in map(META.match, metas) if m and m.group(1))
    missing = sorted(set(range(ranks[-1] + 1)) - set(ranks)) if ranks else []
    return [f"rank-local indexes missing for ranks {missing}"] if missing else []


def _storage_reasons(meta: str, ix: DcpIndex, files: dict[str, FileStat]) -> list[str]:
    reasons = []
    missing = sorted(p for p in ix.required_sizes if p not in files)
    short = sorted(
        f"{p} has {files[p].size} bytes, needs {need} (short by {need - files[p].size})"
        for p, need in ix.required_sizes.items() if p in files and files[p].size < need
    )  # fmt: skip
    if missing:
        reasons.append(f"{meta} references missing storage files: {_few(missing)}")
    if short:
        reasons.append(f"{meta} references truncated storage files: {_few(short)}")
    if ix.unindexed:
        reasons.append(f"{meta} lists entries with no storage location: {_few(list(ix.unindexed))}")
    return reasons


def _st_index_reasons(
    tree: FileTree, prefix: str, files: dict[str, FileStat], indexes: dict[str, DcpIndex]
) -> list[str]:
    """The shards' own structure is checked with the other contained files."""
    reasons = []
    for name in sorted(n for n in files if n.endswith(ST_INDEX)):
        try:
            data = tree.read(_join(prefix, name), 0, files[name].size)
            indexes[name] = parse_safetensors_index(data)
        except (DcpMetadataError, OSError) as exc:
            reasons.append(f"{name} unreadable: {exc}")
            continue
        reasons += _storage_reasons(name, indexes[name], files)
    return reasons


def _contained_file_reasons(tree: FileTree, files: dict[str, FileStat]) -> list[str]:
    """Every torch.save / safetensors file in a checkpoint directory is checked too: a
    marker or an index says the writer finished, the structure says the bytes arrived."""
    reasons: list[str] = []
    for name in sorted(files):
        reasons += _structure_reasons(tree, files[name], name)
    return reasons


def _single_file_reasons(tree: FileTree, name: str, files: dict[str, FileStat]) -> list[str]:
    if name not in files:
        return [f"{name} is missing"]
    return _structure_reasons(tree, files[name], name)


def _structure_reasons(tree: FileTree, f: FileStat, name: str) -> list[str]:
    try:
        if name.endswith(TORCH_SAVE):
            return check_torch_zip(tree, f)
        if name.endswith(SAFETENSORS):
            return check_safetensors(tree, f)
    except OSError as exc:
        return [f"{f.path}: unreadable ({exc})"]
    return []


def _join(prefix: str, name: str) -> str:
    return f"{prefix}/{name}" if prefix else name


def _few(items: list[str]) -> str:
    shown = ", ".join(items[:_MAX_LISTED])
    return shown + (f" and {len(items) - _MAX_LISTED} more" if len(items) > _MAX_LISTED else "")
