"""Comparing what a drill restored with the backup, by what the core knows of it.

Where it sits: dr.drills.verifying calls compare() for each step after the second restore pass.
That pass proves only that the exporter's own comparison agrees with its restore: a restore that
writes the wrong bytes next to a comparison that never looks passes it (two 0-byte files were
once "identical to the backup"). So the exporter names where each item is now
(Exporter.restored_content) and the comparison happens here: a file named by path must hold the
bytes whose sha256 the catalog records (a secret artifact's catalog has no plaintext digest: the
digest of its plaintext as the reader returns it); content that is not a file's bytes (a
database written through its own API) carries the exporter's fingerprints of the destination
and of the backup, which must be equal.
"""

from __future__ import annotations

import hashlib
import os
import stat
from dataclasses import dataclass, field

from dr.contract import ExportContext, RestoredContent, RestoreRequest
from dr.contract.registry import Registry
from dr.model.artifacts import Artifact
from dr.model.plans import Plan
from dr.planner.steps import Step
from dr.repository import names
from dr.repository.reading import ArtifactReader


@dataclass
class Comparison:
    """One step's restored content against the backup."""

    total: int  # the step's artifacts
    checked: int = 0  # items the exporter named and dr compared
    mismatches: list[tuple[str, str]] = field(default_factory=list)  # (item, what differs)


def compare(plan: Plan, registry: Registry, step: Step, reader: ArtifactReader) -> Comparison:
    """Every item the step's exporter names, compared; raises what the exporter or reader raise."""
    source = plan.source(step.name)
    exporter = registry.get(source.type)(ExportContext(source.name, plan.options[source.name], plan.base_dir,
                                                       source.sensitivity))
    comparison = Comparison(total=len(step.artifacts))
    try:
        for unit in step.units:
            opened, _ = names.split_open(unit.artifacts, reader.identities)  # as the restore saw them
            by_identity = {a.identity: a for a in opened}
            request = RestoreRequest(to=unit.to, remap=dict(unit.remap))
            for content in exporter.restored_content(opened, reader, request):
                comparison.checked += 1
                problem = difference(content, by_identity.get(content.item), reader)
                if problem:
                    comparison.mismatches.append((content.item, problem))
    finally:
        close = getattr(exporter, "close", None)
        if callable(close):
            close()
    return comparison


def difference(content: RestoredContent, artifact: Artifact | None, reader: ArtifactReader) -> str:
    """What differs from the backup, or "" when nothing does."""
    if artifact is None:
        return "the exporter named an item this step does not restore"
    if content.path:
        return _file_problem(content.path, artifact, reader)
    if not content.restored:
        return "nothing of it is at the destination"
    if content.restored != content.backed_up:
        return (f"the destination's fingerprint {content.restored[:24]} is not the backup's "
                f"{content.backed_up[:24]}")
    return ""


def _file_problem(path: str, artifact: Artifact, reader: ArtifactReader) -> str:
    try:
        st = os.stat(path, follow_symlinks=False)
    except FileNotFoundError:
        return f"{path} is missing"
    if not stat.S_ISREG(st.st_mode):
        return f"{path} is not a regular file"
    if st.st_size != artifact.size:
        return f"{path} holds {st.st_size} bytes, the backup {artifact.size}"
    with open(path, "rb") as handle:
        actual = hashlib.file_digest(handle, "sha256").hexdigest()
    expected = artifact.digest or _plaintext_digest(artifact, reader)
    if actual != expected:
        return f"{path} has sha256 {actual[:16]}, the backup {expected[:16]}"
    return ""


def _plaintext_digest(artifact: Artifact, reader: ArtifactReader) -> str:
    with reader.open(artifact) as stream:
        return hashlib.file_digest(stream, "sha256").hexdigest()
