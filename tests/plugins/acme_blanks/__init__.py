"""A third-party exporter whose restore is wrong in the way a first draft is: `blanks`.

It backs up the files of a folder faithfully, but its restore creates each file empty, and its
idempotence check asks only whether the file exists. So a second restore pass is all
`unchanged`: the check the drill relied on alone, which called two 0-byte files "identical to
the backup". It places its items for the drill's own comparison (Exporter.restored_content),
by path (`compare: path`, dr checks the catalog's digest) or by its fingerprints
(`compare: fingerprint`, the sha256 of the bytes, from the destination and from the backup).
Not shipped with dr; tests/plugins/installing.py installs it as a distribution.
"""

from __future__ import annotations

import hashlib
import os
from typing import Iterator, Literal

from dr.contract import (ArtifactSink, ContentReader, Discovered, Exporter, ExporterOptions, Outcome, OutcomeStatus,
                         RestoreRequest, RestoredContent)
from dr.model.artifacts import Artifact

KIND = "blank-file"


class BlanksExporter(Exporter):
    type_name = "blanks"
    summary = "files of one folder, restored empty (a flawed plugin for the drill's tests)"
    contract_version = 2

    class Options(ExporterOptions):
        folder: str
        compare: Literal["path", "fingerprint", "none"] = "path"

    def _names(self) -> list[str]:
        return sorted(os.listdir(os.path.join(self.context.base_dir, self.options.folder)))

    def discover(self) -> Iterator[Discovered]:
        return (Discovered(KIND, name) for name in self._names())

    def export(self, sink: ArtifactSink) -> None:
        folder = os.path.join(self.context.base_dir, self.options.folder)
        for name in self._names():
            sink.write(KIND, name, lambda p=os.path.join(folder, name): open(p, "rb"))

    def restore(self, artifacts: list[Artifact], reader: ContentReader,
                request: RestoreRequest) -> Iterator[Outcome]:
        os.makedirs(request.to or ".", exist_ok=True)
        for artifact in artifacts:
            path = os.path.join(request.to or ".", artifact.identity)
            if os.path.exists(path):  # the flaw: existing is taken for identical
                yield Outcome(artifact.identity, OutcomeStatus.UNCHANGED, f"{path} is already there")
                continue
            open(path, "wb").close()  # the flaw: the bytes are never written
            yield Outcome(artifact.identity, OutcomeStatus.RESTORED, f"wrote {path}")

    def restored_content(self, artifacts: list[Artifact], reader: ContentReader,
                         request: RestoreRequest) -> Iterator[RestoredContent]:
        for artifact in artifacts:
            path = os.path.join(request.to or ".", artifact.identity)
            if self.options.compare == "path":
                yield RestoredContent(artifact.identity, path=path)
            elif self.options.compare == "fingerprint":
                with open(path, "rb") as there, reader.open(artifact) as backed_up:
                    yield RestoredContent(artifact.identity, restored=_sha256(there), backed_up=_sha256(backed_up))


def _sha256(stream) -> str:
    return hashlib.file_digest(stream, "sha256").hexdigest()
