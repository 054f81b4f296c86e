"""Verifying the DR copies a snapshot records, as a restore would before reading them (contract
v2 verify_copies): `dr verify` and `dr status` call it, so a copy a restore would refuse (a
flipped byte, a truncated, deleted or swapped file, an edited manifest, a deleted or edited
marker) is found before the incident.

Where it sits: beside restoring, sharing its check: dr.exporters.checkpoints.copies.verifying
.check_copy against the manifest digest the snapshot's record names, at the place the record
names (the same place restore opens).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from dr.exporters.checkpoints.copies.layout import Layout
from dr.exporters.checkpoints.copies.verifying import check_copy
from dr.exporters.checkpoints.exporting import KIND
from dr.exporters.checkpoints.restoring import copy_place
from dr.contract import ContentReader, CopyReport
from dr.model.artifacts import Artifact

if TYPE_CHECKING:
    from dr.exporters.checkpoints import CheckpointsExporter


def verify_recorded(x: "CheckpointsExporter", artifacts: list[Artifact], reader: ContentReader,
                    read_data: bool) -> list[CopyReport]:
    reports = []
    for artifact in (a for a in artifacts if a.kind == KIND):
        what = f"run {artifact.meta.get('run')} step {artifact.meta.get('step')} tier {artifact.meta.get('tier')}"
        try:
            record = json.loads(reader.read(artifact))
            place = copy_place(x, record)
            layout = Layout(record["layout"]["key"], bool(record["layout"]["is_dir"]))
            _, check = check_copy(place, layout, read_data=read_data, expect_manifest=record["manifest"]["sha256"],
                                  parallel=x.options.parallel_files)
        except Exception as exc:  # an unreachable tier or a damaged record: a problem, not a crash
            reports.append(CopyReport(str(artifact.meta.get("copy", artifact.identity)), what,
                                      [f"{type(exc).__name__}: {exc}"]))
            continue
        reports.append(CopyReport(check.url, what, list(check.problems),
                                  {"files": check.files, "bytes": check.bytes, "read_data": read_data}))
    return reports
