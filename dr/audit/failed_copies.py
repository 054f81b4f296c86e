"""A copy that only a failed run holds: the blocker it leaves says so.

A source whose newest run failed is judged from its newest good backup (docs/format.md section
9; dr.audit.auditing._audited_records). When the thing recovery needs was copied only by the
failed run (the run that copied a chart and then met an error), the audit's blocker is right but
would read as if dr never copied it. The message names the failed run and the fix.
"""

from __future__ import annotations

from dataclasses import dataclass

from dr.audit.findings import BLOCKER, Finding
from dr.audit.gathering import DependencyIndex
from dr.model.snapshots import Snapshot


@dataclass
class FailedRunCopies:
    snapshot: Snapshot
    index: DependencyIndex  # what the failed runs' lines in `snapshot` provide (auditing._audited_records)

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
