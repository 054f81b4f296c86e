"""What a DR target holds for one source, and the leftovers dr cleans up there and at the source.

Why one listing: a tier's copies are found from a single paged listing of `<source>/` (every
`DR-COMPLETE` marker is a copy), which also shows the partial copies and stray files that the
cleanup judges, so a backup costs one LIST pass per tier plus two small GETs per copy.

Leftovers, all judged by age against the plan's abort_multipart_after:
- multipart uploads on dr's own target are aborted (a killed copier's parts: if the copier
  reran since, it already resumed and completed them);
- files on dr's target that belong to no complete copy and to no checkpoint the source still
  has are removed (a copy whose source vanished before it completed can never complete);
- multipart uploads at the SOURCE belong to the trainers: they are reported, and aborted only
  when the plan sets allow_source_cleanup.
"""

from __future__ import annotations

import calendar
import time
from dataclasses import dataclass, field

from dr.exporters.checkpoints.copies.layout import MARKER, CopyState, Layout, layout_of_marker, read_copy
from dr.kits.places.contract import Place
from dr.kits.places.contract import Upload
from dr.exporters.checkpoints.copies.tiers import Held
from dr.kits.places.files import FileStat


@dataclass
class Inventory:
    """A tier's copies of one source, keyed by checkpoint path (relative to its root)."""

    source: str
    copies: dict[str, CopyState] = field(default_factory=dict)
    listing: list[FileStat] = field(default_factory=list)

    def held(self) -> dict[str, list[Held]]:
        """Complete copies by run, for tier selection and retention."""
        out: dict[str, list[Held]] = {}
        for path, state in self.copies.items():
            if state.complete:
                ck = state.manifest.get("checkpoint", {})
                out.setdefault(ck.get("run", ""), []).append(
                    Held(ck.get("run", ""), int(ck.get("step", -1)), parse_utc(ck.get("time", "")), path))
        return out

    def layout(self, path: str) -> Layout:
        return self.copies[path].layout

    def paths_of(self, layout: Layout) -> list[str]:
        return [f.path for f in self.listing if layout.owns(f.path)]


def take_inventory(place: Place, source: str) -> Inventory:
    inv = Inventory(source, listing=list(place.list_files(source)))
    cut = len(source) + 1
    for f in inv.listing:
        if f.name == MARKER or f.name.endswith("." + MARKER):
            layout = layout_of_marker(f.path)
            inv.copies[layout.key[cut:]] = read_copy(place, layout)
    return inv


def parse_utc(text: str) -> float:
    try:
        return float(calendar.timegm(time.strptime(text, "%Y-%m-%dT%H:%M:%SZ")))
    except (TypeError, ValueError):
        return 0.0


def old_uploads(place: Place, prefix: str, max_age: float, now: float) -> tuple[list[Upload], list[Upload]]:
    """(every pending upload under prefix, those older than max_age)."""
    uploads = place.pending_uploads(prefix)
    return uploads, [u for u in uploads if now - u.initiated > max_age]


def stray_files(inv: Inventory, live: set[str], max_age: float, now: float) -> list[FileStat]:
    """Files under the source's prefix that belong to no complete copy and to no checkpoint
    path in `live` (checkpoints the source still has), older than max_age."""
    cut = len(inv.source) + 1
    keep = [s.layout for s in inv.copies.values()]  # a damaged copy is reported, never swept
    keep += [Layout(f"{inv.source}/{p}", True) for p in live] + [Layout(f"{inv.source}/{p}", False) for p in live]
    return [f for f in inv.listing
            if not any(k.owns(f.path) for k in keep) and now - f.mtime_ns / 1e9 > max_age and f.path[cut:]]
