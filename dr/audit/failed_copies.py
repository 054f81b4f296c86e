"""A copy that only a failed run holds: the blocker it leaves says so.

A source whose newest run failed is judged from its newest good backup (docs/format.md section
9; dr.audit.auditing._audited_records). When the thing recovery needs was copied only by the
failed run (the run that copied a chart and then met an error), the audit's blocker is right but
would read as if dr never copied it. The message names the failed run and the fix.
"""

from __future__ import annotations

from dataclasses import dataclass

from dr.audit.findings import BLOCKER, Finding
from dr.audit.gathering import DependencyIndex, gather
from dr.model.snapshots import Snapshot, newest_good
from dr.repository.catalogs import read_catalog_records
from dr.repository.repositories import Repository


@dataclass
class FailedRunCopies:
    snapshot: Snapshot
    index: DependencyIndex  # what the failed runs' artifacts in `snapshot` provide

    def annotate(self, findings: list[Finding], judged: DependencyIndex) -> None:
        """Add the failed run to every blocker whose reference only that run copied."""
        for finding in findings:
            if finding.severity != BLOCKER or not finding.reference or judged.providers(finding.reference):
                continue
            runs = sorted({copy.source for copy in self.index.providers(finding.reference)})
            if runs:
                finding.message += (f" A copy is in snapshot {self.snapshot.id[:8]}, but the run of "
                                    f"{', '.join(runs)} there failed, so it is no recovery point "
                                    "(docs/format.md section 9): fix what failed and back up again.")


def failed_run_copies(repo: Repository, snapshots: list[Snapshot], snapshot: Snapshot, dr_image: str | None,
                      name_key: bytes) -> FailedRunCopies | None:
    """What the sources that failed in `snapshot` (and are judged from an older good backup)
    copied there; None when no source is in that case."""
    moved = {r.name for r in snapshot.sources if not r.good and newest_good(snapshots, r.name) is not None}
    if not moved:
        return None
    lines = (line for line in read_catalog_records(repo, snapshot.catalog) if line.get("source") in moved)
    return FailedRunCopies(snapshot, gather(lines, dr_image, name_key))
