"""Finding a chart at its source before reading it: its digest, metadata and provenance.

A `Located` chart knows the digest its source publishes (index.yaml's `digest`, or the OCI
manifest's chart layer) and how to read the bytes; reading checks them against that digest,
so a source serving other bytes is refused with the chart named. The bytes are read only when
the repository needs them (the digest is the artifact's change token).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable

from dr.exporters.helm.http_repository import HttpRepository
from dr.exporters.helm.oci import OciRegistry, sha256
from dr.exporters.helm.references import ChartRef
from dr.exporters.helm.transport import ChartError

if TYPE_CHECKING:
    from dr.exporters.helm.exporter import HelmExporter


class DigestMismatch(ChartError):
    pass


@dataclass
class Located:
    ref: ChartRef
    digest: str  # what the source publishes; "" when an index gives none
    url: str  # where the bytes are read from (no credentials)
    created: str
    metadata: dict  # the chart's metadata as the source lists it (index entry, OCI config)
    provenance: str | None
    read: Callable[[], bytes] = field(repr=False, default=lambda: b"")

    def fetch(self) -> bytes:
        """The chart's bytes, checked against the published digest (DigestMismatch)."""
        data = self.read()
        if self.digest and sha256(data) != self.digest:
            raise DigestMismatch(f"chart {self.ref.identity}: {self.url} serves bytes with digest {sha256(data)}, "
                                 f"but its source publishes {self.digest}; refused")
        return data


class Sources:
    """One HttpRepository per repository for the life of an exporter instance; OCI registries
    are the exporter's own (one per host, HelmExporter.registry)."""

    def __init__(self, exporter: "HelmExporter") -> None:
        self.exporter = exporter
        self._http: dict[str, HttpRepository] = {}

    def http(self, url: str) -> HttpRepository:
        if url not in self._http:
            self._http[url] = HttpRepository(self.exporter.transport, url)
        return self._http[url]

    def oci(self, host: str) -> OciRegistry:
        return self.exporter.registry(host, self.exporter.options.scheme_for(host))

    def locate(self, ref: ChartRef) -> Located:
        return self._locate_oci(ref) if ref.oci else self._locate_http(ref)

    def _locate_http(self, ref: ChartRef) -> Located:
        repo = self.http(ref.repo)
        entry = repo.entry(ref.name, ref.version)
        raw = next(e for e in repo.index()["entries"][ref.name] if str(e.get("version")) == ref.version)
        metadata = {k: v for k, v in raw.items() if k not in ("urls", "digest", "created", "removed")}
        prov = repo.provenance(entry) if self.exporter.options.provenance else None
        return Located(ref, entry.digest, entry.url, entry.created, metadata,
                       prov.decode("utf-8", "replace") if prov is not None else None,
                       lambda: repo.chart(entry))

    def _locate_oci(self, ref: ChartRef) -> Located:
        host, path = ref.oci_parts()
        registry = self.oci(host)
        manifest = registry.chart_manifest(path, ref.version)
        metadata = {}
        config = json.loads(manifest.config and registry.blob(path, manifest.config["digest"]) or b"{}")
        if isinstance(config, dict):
            metadata = config
        prov = None
        if manifest.provenance and self.exporter.options.provenance:
            prov = registry.blob(path, manifest.provenance["digest"]).decode("utf-8", "replace")
        digest = manifest.chart["digest"]
        return Located(ref, digest, f"{ref.repo}/{ref.name}@{digest}", manifest.created, metadata, prov,
                       lambda: registry.blob(path, digest))
