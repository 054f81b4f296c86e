"""The DR copy of one checkpoint: layout, manifest, completion marker, progress journal.

The normative description is docs/format.md section 19. In short, under a tier's target:

    <source>/<checkpoint path>/<the checkpoint's own files>     a plain checkpoint directory
    <source>/<checkpoint path>/dr-manifest.json                 every file: path, size, sha256
    <source>/<checkpoint path>/DR-COMPLETE                      written last; names the manifest
    <source>/<checkpoint path>/dr-journal/<file>.json           progress while copying; removed

A single-file checkpoint (run/step-100.pt) keeps its name, and its dr objects sit beside it
with the file name as prefix: `step-100.pt.dr-manifest.json`, `step-100.pt.DR-COMPLETE`.

Why: the copy must be loadable in place by the trainer's own loader (DCP's FileSystemReader,
an fsspec reader on the bucket), so it is the checkpoint's files at their relative paths,
nothing transformed. The manifest adds what DCP's index lacks (digests); the marker says the
copy is whole. Like a snapshot manifest, the marker is written last and a copy without it
does not exist; it names the manifest's digest, so a manifest changed afterwards is detected.
Journal entries are write-once objects, one per copied file, so a copier killed half-way
resumes without uploading a completed file again, and no object is ever rewritten.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass
from typing import Any

from dr.kits.places.contract import Place
from dr.exporters.checkpoints.formats.tree import parent_of
from dr.kits.places.files import FileStat

FORMAT = "dr-checkpoint-copy"
VERSION = 1
MANIFEST = "dr-manifest.json"
MARKER = "DR-COMPLETE"
JOURNAL = "dr-journal"
DR_NAMES = (MANIFEST, MARKER)


class CopyError(Exception):
    """A DR copy is missing, incomplete, or does not match its manifest (the message names
    the file)."""


def canonical(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":")).encode()


def utc(seconds: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))


@dataclass(frozen=True)
class Layout:
    """Where one checkpoint's copy lives in a tier's place. `key` is `<source>/<path>`."""

    key: str
    is_dir: bool

    @property
    def base(self) -> str:
        """The directory the checkpoint's files are relative to."""
        return self.key if self.is_dir else parent_of(self.key)

    @property
    def meta_prefix(self) -> str:
        return f"{self.key}/" if self.is_dir else f"{self.key}."

    def file(self, rel: str) -> str:
        return f"{self.base}/{rel}" if self.base else rel

    @property
    def manifest(self) -> str:
        return self.meta_prefix + MANIFEST

    @property
    def marker(self) -> str:
        return self.meta_prefix + MARKER

    @property
    def journal(self) -> str:
        return f"{self.meta_prefix}{JOURNAL}/"

    def owns(self, path: str) -> bool:
        """Whether a path in the place belongs to this copy (its files or dr objects)."""
        return path.startswith(self.meta_prefix) or (not self.is_dir and path == self.key)


def layout_for(source: str, path: str, is_dir: bool) -> Layout:
    return Layout(f"{source}/{path}", is_dir)


def layout_of_marker(marker_path: str) -> Layout:
    """The layout whose marker is at `marker_path` (a listing found it)."""
    if marker_path.endswith("/" + MARKER):
        return Layout(marker_path[: -len(MARKER) - 1], True)
    return Layout(marker_path[: -len(MARKER) - 1], False)


@dataclass(frozen=True)
class CopyState:
    """A copy as found: complete exactly when `problem` is empty."""

    layout: Layout
    manifest: dict | None
    manifest_sha256: str
    problem: str

    @property
    def complete(self) -> bool:
        return not self.problem

    def files(self) -> list[dict]:
        return list((self.manifest or {}).get("files", []))


def read_copy(place: Place, layout: Layout, expect_manifest: str = "") -> CopyState:
    """Check the marker and the manifest it names (cheap: two small reads, no file data)."""
    raw_marker = place.get(layout.marker)
    if raw_marker is None:
        return CopyState(layout, None, "", f"{place.url_of(layout.marker)} is missing: the copy is "
                                           "incomplete, or was pruned")
    raw = place.get(layout.manifest)
    if raw is None:
        return CopyState(layout, None, "", f"{place.url_of(layout.manifest)} is missing")
    sha = hashlib.sha256(raw).hexdigest()
    try:
        marker, manifest = json.loads(raw_marker), json.loads(raw)
    except ValueError as exc:
        return CopyState(layout, None, sha, f"marker or manifest is not JSON: {exc}")
    problem = ""
    if marker.get("manifest_sha256") != sha:
        problem = f"{place.url_of(layout.manifest)} was changed after the copy completed (digest mismatch)"
    elif expect_manifest and sha != expect_manifest:
        problem = f"{place.url_of(layout.manifest)} is not the manifest the snapshot recorded"
    elif manifest.get("format") != FORMAT or manifest.get("version") != VERSION:
        problem = f"{place.url_of(layout.manifest)}: not a version-{VERSION} {FORMAT} manifest"
    return CopyState(layout, manifest, sha, problem)


def build_manifest(checkpoint: dict, files: dict[str, tuple[int, str]], tier: str, now: float) -> bytes:
    """checkpoint: {kind, run, step, time, source, path}; files: rel -> (size, sha256)."""
    return canonical({
        "format": FORMAT, "version": VERSION, "tier": tier, "created": utc(now),
        "checkpoint": checkpoint,
        "files": [{"path": p, "size": s, "sha256": d} for p, (s, d) in sorted(files.items())],
    })


def marker_bytes(manifest_sha256: str, now: float) -> bytes:
    return canonical({"format": FORMAT, "manifest_sha256": manifest_sha256, "completed": utc(now)})


# -- the journal ------------------------------------------------------------------------------
def journal_entry(rel: str, size: int, sha256: str, source_version: str) -> bytes:
    return canonical({"path": rel, "size": size, "sha256": sha256, "source_version": source_version})


def completed_files(place: Place, layout: Layout, listing: dict[str, FileStat],
                    wanted: dict[str, tuple[int, str]]) -> dict[str, str]:
    """Files a previous run finished: rel -> sha256, for journal entries whose file is stored
    with the recorded size and whose source is still the version that was copied.

    listing: the place's files under the copy (full paths); wanted: rel -> (size, version).
    """
    done: dict[str, str] = {}
    for path in listing:
        if not path.startswith(layout.journal) or not path.endswith(".json"):
            continue
        raw = place.get(path)
        try:
            entry = json.loads(raw or b"")
            rel, size = entry["path"], entry["size"]
        except (ValueError, KeyError, TypeError):
            continue
        stored = listing.get(layout.file(rel))
        if rel in wanted and wanted[rel] == (size, entry.get("source_version")) and \
                stored is not None and stored.size == size:
            done[rel] = entry["sha256"]
    return done


def remove(place: Place, layout: Layout, listing: list[str]) -> None:
    """Delete a copy: the marker FIRST (from then on the copy does not exist, whatever the
    rest of the deletion does), then the manifest, then everything else it owns."""
    place.delete(layout.marker)
    place.delete(layout.manifest)
    place.delete_many([p for p in listing if layout.owns(p) and p not in (layout.marker, layout.manifest)])
