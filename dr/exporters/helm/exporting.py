"""One backup run of the `helm` exporter: which charts, locate, check, store.

Each chart is located at its source (index.yaml entry or OCI manifest: the published digest),
then written as a `helm-chart` artifact whose bytes are read only when its change token (the
digest) differs from the previous snapshot's, and checked against the digest as they are read.
A chart that cannot be copied (repository down, version missing, bytes not matching) is an
error finding naming it and what needed it (the sources, and the Helm releases that run it);
the other charts still copy. The source fails
(raises) only when every chart failed.
"""

from __future__ import annotations

import io
from typing import TYPE_CHECKING

from dr.contract import ArtifactSink
from dr.exporters.helm import records
from dr.exporters.helm.locating import DigestMismatch, Located
from dr.exporters.helm.oci import sha256
from dr.exporters.helm.selecting import Group, Wanted, select
from dr.exporters.helm.transport import ChartError, NotFound

if TYPE_CHECKING:
    from dr.exporters.helm.exporter import HelmExporter


class ExportRun:
    def __init__(self, exporter: "HelmExporter", sink: ArtifactSink) -> None:
        self.exporter, self.sink, self.context = exporter, sink, exporter.context
        self.failed: list[str] = []
        self.copied: dict[str, str] = {}  # identity -> digest

    def execute(self) -> None:
        selection = select(self.exporter)
        for severity, code, message, facts in selection.problems:
            if severity == "error":
                self._fail(code, message, **facts)
            else:
                self.context.finding(severity, code, message, **facts)
        if not selection.wanted:
            self.context.log("no charts to copy" + (" (" + "; ".join(self.failed) + ")" if self.failed else ""))
            if self.failed:
                raise RuntimeError("no chart copied: " + "; ".join(self.failed[:5]))
            return
        for item in selection.wanted.values():
            self._copy(item)
        for group in selection.groups:
            self._write_group(group)
        if not self.copied:
            raise RuntimeError(f"no chart copied; {len(self.failed)} failed: " + "; ".join(self.failed[:5]))

    def _copy(self, item: Wanted) -> None:
        why = "; ".join(item.why[:3])
        facts = {"chart": item.ref.identity, "releases": [f"{r['namespace']}/{r['name']}" for r in item.releases]}
        try:
            self._store(item)
        except DigestMismatch as exc:
            self._fail("chart-digest-mismatch", f"{exc} ({why})", **facts)
        except ChartError as exc:  # NotFound: the repository lists no such version, or no such tag
            code = "chart-missing" if isinstance(exc, NotFound) else "chart-unavailable"
            self._fail(code, f"chart {item.ref.identity} ({why}): {exc}", **facts)

    def _store(self, item: Wanted) -> None:
        found = self.exporter.sources.locate(item.ref)
        artifact = self.sink.write(records.CHART, item.ref.identity, self._content(found),
                                   sensitivity=self.exporter.sensitivity(),
                                   dependencies=records.chart_dependencies(found),
                                   meta=records.chart_meta(item, found), change_token=records.change_token(found))
        self.copied[item.ref.identity] = found.digest
        self.context.log(f"{item.ref.identity} ({artifact.size} bytes{', with provenance' if found.provenance else ''})")

    def _content(self, found: Located):
        """The bytes, read when the repository needs them (the digest is the change token); an
        index without digests makes dr read every time and record the digest of what it read."""
        if found.digest:
            return lambda: io.BytesIO(found.fetch())  # checked against the digest as it is read
        data = found.fetch()
        found.digest = sha256(data)
        self.context.finding("warning", "chart-digest-unpublished",
                             f"chart {found.ref.identity}: the index.yaml of {found.ref.repo} gives no digest; its "
                             "bytes were stored as served, with nothing to check them against",
                             chart=found.ref.identity)
        return data

    def _write_group(self, group: Group) -> None:
        copied = {ref.identity: self.copied[ref.identity] for ref in group.charts if ref.identity in self.copied}
        missing = [ref.identity for ref in group.charts if ref.identity not in self.copied]
        whole = not missing and not group.left_out
        if not whole:
            left = group.left_out + ([f"{len(missing)} chart(s) failed: " + ", ".join(missing[:5])] if missing else [])
            self.context.finding("warning", "chart-repository-partial",
                                 f"chart repository {group.reference} (needed by {', '.join(group.sources)}) is "
                                 f"copied in part ({'; '.join(left)}): the audit does not count it as covered",
                                 repository=group.reference)
        content = records.repository_content(group, copied)
        self.sink.write(records.REPOSITORY, group.reference, content, sensitivity=self.exporter.sensitivity(),
                        meta=records.repository_meta(group, copied, whole), change_token=sha256(content))

    def _fail(self, code: str, message: str, **facts) -> None:
        self.failed.append(message)
        self.context.finding("error", code, message, **facts)
