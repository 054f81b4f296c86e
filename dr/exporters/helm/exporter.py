"""The `helm` exporter class: the contract's answers; the work is in the modules beside it."""

from __future__ import annotations

import os
from typing import Iterator

from dr.contract import (ArtifactSink, ContentReader, CopyReport, DeployNeeds, Destination, Discovered, DrillComparison,
                         ExportContext, Exporter, NoDestination, Ordering, Outcome, OutsideCopies, Planning, RemapKind,
                         RestoreOption, RestoreRequest, RestoredContent, Rewriter, RtoEstimates, RunNeeds)
from dr.exporters.helm import records
from dr.exporters.helm.deploying import run_needs
from dr.exporters.helm.exporting import ExportRun
from dr.exporters.helm.locating import Sources
from dr.exporters.helm.logins import registry_logins, repository_logins
from dr.exporters.helm.oci import OciRegistry
from dr.exporters.helm.options import HelmOptions
from dr.exporters.helm.restoring import PLAIN_HTTP, check_stored, restore_charts, restored_charts
from dr.exporters.helm.references import OCI
from dr.exporters.helm.selecting import CHART_DEPENDENCY_KIND, DEPENDENCY_KIND, select
from dr.exporters.helm.transport import ChartError, Transport
from dr.kits.oci.credentials import Credentials
from dr.kits.tls import verify_setting
from dr.model.artifacts import Artifact, Sensitivity


REMAP = "chart-repository"


class HelmExporter(Exporter, Planning, OutsideCopies, DeployNeeds, RtoEstimates, DrillComparison):
    type_name = "helm"
    summary = ("Helm charts, checked against their published digests, with provenance: the charts of the "
               "plan's Helm releases and the charts it lists; restored into a chart directory or an OCI registry")
    contract_version = 2
    Options = HelmOptions
    reads_plan_dependencies = True
    # charts are restored before the workloads whose releases install them (the core's @images
    # rule also matches steps holding helm-chart artifacts)
    ordering = Ordering(frozenset({"charts"}))
    # a plan remap `chart-repository` names where the DR copy of a repository's charts goes (a
    # chart directory or an OCI registry): the default destination of a whole-plan restore, and
    # what the releases' pinned charts point at once restored
    remap_kinds = (RemapKind(REMAP, frozenset({CHART_DEPENDENCY_KIND, DEPENDENCY_KIND}),
                             "old: a chart repository URL (https://charts.example.com/stable, oci://host/path); "
                             "new: where its charts are restored: a directory (relative to the plan) or "
                             "oci://host/path"),)
    restore_options = (
        RestoreOption("plain-http", "", "push to the --to oci:// registry over plain HTTP (loopback always is)",
                      PLAIN_HTTP, switch=True),
    )

    def __init__(self, context: ExportContext) -> None:
        super().__init__(context)
        self._transport: Transport | None = None
        self._registries: dict[tuple[str, str], OciRegistry] = {}
        self._logins: Credentials | None = None
        self._sources: Sources | None = None

    def _in_plan_folder(self, path: str | None) -> str | None:
        return os.path.join(self.context.base_dir, path) if path else None

    @property
    def transport(self) -> Transport:
        """HTTP chart repositories' transport (their logins: auth_file alone)."""
        if self._transport is None:
            o = self.options
            logins = repository_logins(self._in_plan_folder(o.auth_file))
            self._transport = Transport(o.timeout_seconds, o.tls_verify, logins, self._in_plan_folder(o.ca_file))
        return self._transport

    def registry(self, host: str, scheme: str) -> OciRegistry:
        """One OCI registry per (scheme, host) for the life of this instance, one login resolver
        for all of them (auth_file, helm's and docker's files, credential helpers, ECR)."""
        if self._logins is None:
            self._logins = registry_logins(self._in_plan_folder(self.options.auth_file))
        if (scheme, host) not in self._registries:
            o = self.options
            verify = verify_setting(self._in_plan_folder(o.ca_file), insecure=not o.tls_verify)
            self._registries[(scheme, host)] = OciRegistry(host, scheme, self._logins, verify_tls=verify,
                                                           timeout=o.timeout_seconds)
        return self._registries[(scheme, host)]

    @property
    def sources(self) -> Sources:
        if self._sources is None:
            self._sources = Sources(self)
        return self._sources

    def sensitivity(self) -> Sensitivity:
        return self.context.sensitivity or Sensitivity.INTERNAL

    # -- the contract -----------------------------------------------------------------------
    def discover(self) -> Iterator[Discovered]:
        """The charts the plan lists that their source publishes now (its index entry or manifest)."""
        for item in select(self, from_plan=False).wanted.values():
            try:
                found = self.sources.locate(item.ref)
            except ChartError:
                continue
            yield Discovered(records.CHART, item.ref.identity, found.digest)

    def export(self, sink: ArtifactSink) -> None:
        ExportRun(self, sink).execute()

    def restore(self, artifacts: list[Artifact], reader: ContentReader,
                request: RestoreRequest) -> Iterator[Outcome]:
        yield from restore_charts(self, artifacts, reader, request)

    # -- contract v2: planning ---------------------------------------------------------------
    def destinations(self, artifacts: list[Artifact], rewrite: Rewriter) -> list[Destination]:
        """Each chart to its repository's `chart-repository` remap; NoDestination naming the
        repositories without one (the chart repository it came from is what was lost)."""
        groups: dict[str, Destination] = {}
        unmapped: dict[str, None] = {}
        for artifact in [a for a in artifacts if a.kind == records.CHART]:
            to, how = self._remapped(artifact, rewrite)
            if to is None:
                unmapped[str(artifact.meta.get("repository") or artifact.identity)] = None
                continue
            groups.setdefault(to, Destination([], to, how, f"-> {to}")).artifacts.append(artifact)
        if unmapped:
            source = self.context.source
            raise NoDestination(f"no chart-repository remap in the plan for {', '.join(unmapped)}: give --to "
                                f"{source}=DIR or --to {source}=oci://HOST/PATH, or add to restore.remaps "
                                f"{{kind: {REMAP}, old: REPOSITORY, new: DIR or oci://HOST/PATH}}")
        lists = [a for a in artifacts if a.kind != records.CHART]  # skipped by restore(): ride along
        if not groups:
            return [Destination(lists, None, "nothing to write (lists of charts only)")] if lists else []
        first = next(iter(groups.values()))
        first.artifacts += lists
        return list(groups.values())

    def _remapped(self, artifact: Artifact, rewrite: Rewriter) -> tuple[str | None, str]:
        found = rewrite(CHART_DEPENDENCY_KIND, artifact.identity)
        tail = f"/{artifact.meta.get('name')}:{artifact.meta.get('version')}"
        if found is None or not found.new.endswith(tail) or found.new.startswith(("http://", "https://")):
            return None, ""
        to = found.new[:-len(tail)]
        if not to.startswith(OCI):
            to = os.path.join(self.context.base_dir, to)
        return to, f"plan remap {REMAP}: {found.remap_old} -> {found.remap_new}"

    def scratch_destination(self, folder: str) -> str | None:
        return folder  # a directory chart repository

    def restored_content(self, artifacts: list[Artifact], reader: ContentReader,
                         request: RestoreRequest) -> Iterator[RestoredContent]:
        """Each chart at the destination: its bytes' sha256 against the catalog's digest, its
        provenance against the recorded one, and (a directory) the digest index.yaml lists."""
        return restored_charts(self, artifacts, reader, request)

    def run_needs(self) -> RunNeeds:
        return run_needs(self.options, self.context.base_dir)

    def restore_bytes(self, artifacts: list[Artifact]) -> dict[str, int]:
        return {"image_warmup": sum(a.size for a in artifacts if a.kind == records.CHART)}

    def verify_copies(self, artifacts: list[Artifact], reader: ContentReader, read_data: bool) -> list[CopyReport]:
        """Each stored chart against the digest its source published, as restore() checks it
        before writing (with read_data; the repository's own check covers the blobs)."""
        if not read_data:
            return []
        reports = []
        for artifact in artifacts:
            if artifact.kind != records.CHART:
                continue
            stored = check_stored(artifact, reader)
            reports.append(CopyReport(f"repository: {artifact.identity}", f"chart {artifact.identity}",
                                      [stored.problem] if stored.problem else [],
                                      {"digest": artifact.meta.get("digest"), "bytes": len(stored.data)}))
        return reports
