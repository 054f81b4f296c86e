"""A third-party exporter that restores in place by default: `ledgers`, files of a share.

Its artifacts record where they came from, the share's URL, as a dependency of a kind it
declares in `origin_kinds`, and it keeps the default `destinations()` (one call, `to=None`):
without --to its restore writes back into that share. So that share is where the restore
writes, and the audit and the restore plan must judge it alike. It declares a remap kind for it
(`ledger-share`). Not shipped with dr; tests/plugins/installing.py installs it.
"""

from __future__ import annotations

import os
from typing import Iterator

from dr.contract import (ArtifactSink, ContentReader, Discovered, Exporter, ExporterOptions, Outcome, OutcomeStatus,
                         RemapKind, RestoreRequest)
from dr.model.artifacts import Artifact, Dependency

KIND = "ledger"
SHARE = "ledger-share"  # the dependency kind: the share a ledger came from, and goes back to


class LedgersExporter(Exporter):
    type_name = "ledgers"
    summary = "ledger files of a share, restored into it (a plugin for the planner's tests)"
    contract_version = 2
    origin_kinds = frozenset({SHARE})
    remap_kinds = (RemapKind(SHARE, frozenset({SHARE}), "old and new: share URLs", request_prefix="share:"),)

    class Options(ExporterOptions):
        folder: str  # where the share is mounted here
        share: str  # the share's URL

    def discover(self) -> Iterator[Discovered]:
        return (Discovered(KIND, name) for name in sorted(os.listdir(self.options.folder)))

    def export(self, sink: ArtifactSink) -> None:
        for name in sorted(os.listdir(self.options.folder)):
            sink.write(KIND, name, lambda p=os.path.join(self.options.folder, name): open(p, "rb"),
                       dependencies=[Dependency(SHARE, self.options.share, "the share it came from")])

    def restore(self, artifacts: list[Artifact], reader: ContentReader,
                request: RestoreRequest) -> Iterator[Outcome]:
        folder = request.to or self.options.folder
        for artifact in artifacts:
            if request.dry_run:
                yield Outcome(artifact.identity, OutcomeStatus.PLANNED, f"would write {folder}")
                continue
            os.makedirs(folder, exist_ok=True)
            with open(os.path.join(folder, artifact.identity), "wb") as out:
                out.write(reader.read(artifact))
            yield Outcome(artifact.identity, OutcomeStatus.RESTORED, f"wrote {folder}")
