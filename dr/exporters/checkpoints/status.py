"""Recovery point per training run, and verification of every DR copy a plan's tiers hold.

RPO here is measured, not declared: for each run and tier, the newest checkpoint that is
complete at the source against the newest copy that is complete and intact in the tier (its
marker names its manifest's digest). `rpo_seconds` is how much training time a loss of the
source would cost now (0 when the newest complete checkpoint is copied); `copy_age_seconds`
is how old the restorable state is. A run whose source is gone still reports its copies.

These read storage only (no repository, no lock): `dr status` can run them while a backup runs.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING

from dr.exporters.checkpoints.exporting import scan_roots
from dr.exporters.checkpoints.copies.inventory import take_inventory
from dr.exporters.checkpoints.copies.verifying import CopyCheck, check_copy

if TYPE_CHECKING:
    from dr.exporters.checkpoints import CheckpointsExporter


@dataclass
class RunRPO:
    run: str
    tier: str
    source_step: int | None  # newest complete checkpoint at the source (None: none found)
    source_time: float | None  # its time (newest file's mtime), seconds since the epoch
    copy_step: int | None  # newest intact DR copy in this tier (None: no copy)
    copy_time: float | None  # the copied checkpoint's time
    rpo_seconds: float | None  # source_time - copy_time, 0 when up to date; None: no copy, or
    #                            no complete checkpoint left at the source to compare with
    copy_age_seconds: float | None  # now - copy_time
    behind: int  # complete source checkpoints newer than the copy (all of them: no copy)
    copy_path: str = ""  # the copied checkpoint's path under its root
    copy_url: str = ""  # where the copy is
    problems: list[str] = field(default_factory=list)  # why that copy would not restore (checked)

    def to_json(self) -> dict:
        return asdict(self)


def rpo_report(exporter: "CheckpointsExporter", *, now: float | None = None,
               settle_seconds: float = 0.0, read_data: bool = False) -> list[RunRPO]:
    """One row per (run, tier), runs sorted, tiers in plan order. settle_seconds=0 judges
    the source from a single listing (fast; a checkpoint being written is then judged by its
    files alone, which the completeness rules still catch in almost every case). The newest
    copy of each row is checked as a restore checks it (marker, manifest, every file's size;
    with read_data every file's SHA-256): a copy that would not restore is in `problems`."""
    now = exporter.clock() if now is None else now
    found = scan_roots(exporter, settle_seconds).runs()
    runs = {run: [c for c in cks if c.complete] for run, cks in found.items()}
    rows = []
    for tier in exporter.options.effective_tiers():
        place = exporter.tier_place(tier)
        inventory = take_inventory(place, exporter.context.source)
        held = inventory.held()
        for run in sorted(set(runs) | set(held)):
            row = _row(run, tier.name, runs.get(run, []), held.get(run, []), now)
            if row.copy_path:
                row.copy_url = place.url_of(f"{exporter.context.source}/{row.copy_path}")
                _, check = check_copy(place, inventory.layout(row.copy_path), read_data=read_data,
                                      parallel=exporter.options.parallel_files)
                row.problems = list(check.problems)
            rows.append(row)
    return sorted(rows, key=lambda r: r.run)


def _row(run: str, tier: str, complete: list, held: list, now: float) -> RunRPO:
    newest = complete[-1] if complete else None
    copy = max(held, key=lambda h: h.step, default=None)
    src_time = newest.time if newest else None
    row = RunRPO(run, tier, newest.step if newest else None, src_time, None, None, None, None,
                 len(complete))
    if copy is not None:
        row.copy_step, row.copy_time = copy.step, copy.time
        row.copy_age_seconds = max(0.0, now - copy.time)
        if newest is not None:  # copy.time has whole seconds: compare steps before times
            row.rpo_seconds = 0.0 if copy.step >= newest.step else max(0.0, newest.time - copy.time)
        row.behind = sum(1 for c in complete if c.step > copy.step)
        row.copy_path = copy.path
    return row


def verify_copies(exporter: "CheckpointsExporter", *, read_data: bool = True, tier: str | None = None
                  ) -> list[CopyCheck]:
    """Check every copy in the plan's tiers (or one tier): marker, manifest, sizes, and with
    read_data every file's SHA-256. Problems name the file."""
    out = []
    for t in exporter.options.effective_tiers():
        if tier and t.name != tier:
            continue
        place = exporter.tier_place(t)
        inv = take_inventory(place, exporter.context.source)
        for path in sorted(inv.copies):
            _, check = check_copy(place, inv.layout(path), read_data=read_data,
                                  parallel=exporter.options.parallel_files)
            check.url = f"{t.name}: {check.url}"
            out.append(check)
    return out


__all__ = ["CopyCheck", "RunRPO", "rpo_report", "verify_copies"]
