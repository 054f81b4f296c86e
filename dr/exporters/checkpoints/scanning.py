"""One pass over the checkpoint roots: what checkpoints exist, which run and step each is, and
whether each is complete (with reasons).

Why one settled listing per root, not one per checkpoint: assess_settled lists, sleeps and
lists again for ONE candidate, so a root with a hundred checkpoints would sleep a hundred
times. Here every root is listed, the settle window passes once, every root is listed again,
and each candidate is judged from its slice of the two listings (one LIST pass per root on
S3, whatever the number of checkpoints).

On top of completeness.assess: a multipart upload still pending under a checkpoint means a
writer is uploading there, or died doing it (s3fs/boto writers upload shards in parts): the
checkpoint is not complete, whatever its files look like.

Run and step come from the plan's run_pattern (named groups `run`, `step`) matched against
the checkpoint's path relative to its root; a checkpoint it does not match is reported, not
guessed at.
"""

from __future__ import annotations

import bisect
import re
import time
from dataclasses import dataclass, field
from typing import Callable, Iterable, Iterator

from dr.exporters.checkpoints.formats.completeness import Candidate, MarkerRule, assess
from dr.exporters.checkpoints.formats.discovery import DIR_KINDS, discover
from dr.kits.places.contract import Place
from dr.kits.places.contract import Upload
from dr.exporters.checkpoints.formats.tree import parent_of
from dr.kits.places.files import FileStat


@dataclass
class Checkpoint:
    """One candidate checkpoint under a root. files: keyed relative to `base` (the candidate
    directory, or a single file's directory); their FileStat paths are root-relative."""

    place: Place
    root: int
    path: str
    kind: str
    run: str
    step: int
    files: dict[str, FileStat]
    reasons: tuple[str, ...]
    notes: tuple[str, ...] = ()
    #: the indexes completeness parsed (DCP `.metadata`, safetensors index), by file name
    indexes: dict = field(default_factory=dict)

    @property
    def complete(self) -> bool:
        return not self.reasons

    @property
    def is_dir(self) -> bool:
        return self.kind in DIR_KINDS

    @property
    def time(self) -> float:
        """When it was written: its newest file's mtime (S3: LastModified)."""
        return max((f.mtime_ns for f in self.files.values()), default=0) / 1e9

    @property
    def first_written(self) -> float:
        """When its first file was last written: with `time`, the save's span on storage."""
        return min((f.mtime_ns for f in self.files.values()), default=0) / 1e9

    @property
    def url(self) -> str:
        return self.place.url_of(self.path)


@dataclass
class Skipped:
    root: int
    path: str
    reason: str


@dataclass
class Scan:
    checkpoints: list[Checkpoint] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    uploads: dict[int, list[Upload]] = field(default_factory=dict)

    def runs(self) -> dict[str, list[Checkpoint]]:
        """Checkpoints by run, oldest step first."""
        out: dict[str, list[Checkpoint]] = {}
        for ck in sorted(self.checkpoints, key=lambda c: (c.run, c.step)):
            out.setdefault(ck.run, []).append(ck)
        return out


class ListedTree:
    """A FileTree whose listing is a fixed snapshot (reads go to the place): discovery and
    assessment then see exactly the listing the settle rule compared."""

    def __init__(self, place: Place, files: list[FileStat]) -> None:
        self.place = place
        self.files = sorted(files, key=lambda f: f.path)
        self._paths = [f.path for f in self.files]

    def list_files(self, prefix: str = "") -> Iterator[FileStat]:
        if not prefix:
            yield from self.files
            return
        start = bisect.bisect_left(self._paths, prefix + "/")
        for f in self.files[start:]:
            if not f.path.startswith(prefix + "/"):
                break
            yield f

    def read(self, path: str, start: int, length: int) -> bytes:
        return self.place.read(path, start, length)

    def slice(self, cand: Candidate) -> dict[str, FileStat]:
        """completeness.candidate_listing, from this listing."""
        if cand.kind in DIR_KINDS:
            cut = len(cand.path) + 1
            return {f.path[cut:]: f for f in self.list_files(cand.path)}
        parent = parent_of(cand.path)
        cut = len(parent) + 1 if parent else 0
        return {f.path[cut:]: f for f in self.list_files(parent) if "/" not in f.path[cut:]}


def scan(places: list[Place], *, run_pattern: str, markers: Iterable[MarkerRule], marker_names: list[str],
         settle_seconds: float, sleep: Callable[[float], None] = time.sleep) -> Scan:
    """List every root, wait out the settle window once, list again, judge every candidate."""
    before = [list(p.list_files("")) for p in places]
    if settle_seconds > 0:
        sleep(settle_seconds)
    after = [ListedTree(p, list(p.list_files(""))) for p in places]
    result = Scan(uploads={i: p.pending_uploads("") for i, p in enumerate(places)})
    pattern, rules, seen = re.compile(run_pattern), list(markers), {}
    for i, (place, tree) in enumerate(zip(places, after)):
        old = ListedTree(place, before[i])
        for cand in discover(tree, marker_names):
            named = _name(pattern, cand.path)
            if named is None:
                result.skipped.append(Skipped(i, cand.path, "does not match run_pattern (which run and "
                                                            "step is it?)"))
                continue
            if named in seen:
                result.skipped.append(Skipped(i, cand.path, f"run {named[0]!r} step {named[1]} is also "
                                                            f"at {seen[named]} (first one kept)"))
                continue
            seen[named] = place.url_of(cand.path)
            result.checkpoints.append(_judge(place, i, cand, named, old, tree, rules, result.uploads[i]))
    return result


def _name(pattern: re.Pattern, path: str) -> tuple[str, int] | None:
    match = pattern.fullmatch(path)
    if not match or match.group("run") is None or match.group("step") is None:
        return None
    return match.group("run"), int(match.group("step"))


def _judge(place: Place, root: int, cand: Candidate, named: tuple[str, int], before: ListedTree,
           after: ListedTree, rules: list[MarkerRule], uploads: list[Upload]) -> Checkpoint:
    verdict = assess(after, cand, before.slice(cand), after.slice(cand), rules)
    reasons = list(verdict.reasons) + _upload_reasons(cand, uploads)
    return Checkpoint(place, root, cand.path, cand.kind, named[0], named[1], dict(verdict.files),
                      tuple(reasons), verdict.notes, dict(verdict.indexes))


def _upload_reasons(cand: Candidate, uploads: list[Upload]) -> list[str]:
    inside = sorted(u.path for u in uploads
                    if u.path == cand.path or (cand.kind in DIR_KINDS and u.path.startswith(cand.path + "/")))
    if not inside:
        return []
    shown = ", ".join(inside[:5]) + (f" and {len(inside) - 5} more" if len(inside) > 5 else "")
    return [f"multipart upload never completed for {shown}: a writer is still uploading, or died"]
