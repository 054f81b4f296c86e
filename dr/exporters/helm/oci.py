"""Helm charts in an OCI registry, as `helm push` stores them (the OCI distribution API).

A chart is a manifest whose config has media type CONFIG (the chart's metadata as JSON), with
one CHART layer (the .tgz) and, when signed, one PROVENANCE layer (the .prov). Every blob read
is checked against its digest; a manifest's digest against the one asked for.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from urllib.parse import urljoin

from dr.exporters.helm.transport import ChartError, NotFound, Transport

CONFIG = "application/vnd.cncf.helm.config.v1+json"
CHART = "application/vnd.cncf.helm.chart.content.v1.tar+gzip"
PROVENANCE = "application/vnd.cncf.helm.chart.provenance.v1.prov"
MANIFEST = "application/vnd.oci.image.manifest.v1+json"
ACCEPT = ", ".join([MANIFEST, "application/vnd.oci.image.index.v1+json",
                    "application/vnd.docker.distribution.manifest.v2+json"])


def sha256(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


@dataclass
class ChartManifest:
    digest: str
    config: dict  # the config's descriptor (the chart's metadata as JSON)
    chart: dict  # the chart layer's descriptor
    provenance: dict | None
    created: str


class OciRegistry:
    def __init__(self, transport: Transport, host: str, scheme: str) -> None:
        self.transport, self.host = transport, host
        self.base = f"{scheme}://{host}/v2"

    def _scope(self, path: str, push: bool = False) -> str:
        return f"repository:{path}:{'pull,push' if push else 'pull'}"

    def manifest(self, path: str, reference: str) -> tuple[str, bytes]:
        response = self.transport.request("GET", f"{self.base}/{path}/manifests/{reference}",
                                          scope=self._scope(path), headers={"Accept": ACCEPT})
        body = response.content
        digest = sha256(body)
        if reference.startswith("sha256:") and digest != reference:
            raise ChartError(f"{self.host}/{path}@{reference}: the registry served a manifest whose digest is "
                             f"{digest}")
        return digest, body

    def chart_manifest(self, path: str, tag: str) -> ChartManifest:
        digest, body = self.manifest(path, tag)
        data = json.loads(body)
        if (data.get("config") or {}).get("mediaType") != CONFIG:
            raise ChartError(f"{self.host}/{path}:{tag} is not a Helm chart (config media type "
                             f"{(data.get('config') or {}).get('mediaType')!r})")
        layers = data.get("layers") or []
        chart = next((d for d in layers if d.get("mediaType") == CHART), None)
        if chart is None:
            raise ChartError(f"{self.host}/{path}:{tag}: the manifest has no chart layer ({CHART})")
        prov = next((d for d in layers if d.get("mediaType") == PROVENANCE), None)
        created = (data.get("annotations") or {}).get("org.opencontainers.image.created", "")
        return ChartManifest(digest, data["config"], chart, prov, created)

    def blob(self, path: str, digest: str) -> bytes:
        body = self.transport.get(f"{self.base}/{path}/blobs/{digest}", scope=self._scope(path))
        if sha256(body) != digest:
            raise ChartError(f"{self.host}/{path}@{digest}: the registry served bytes whose digest is "
                             f"{sha256(body)}")
        return body

    def tags(self, path: str) -> list[str]:
        try:
            body = self.transport.request("GET", f"{self.base}/{path}/tags/list", scope=self._scope(path)).json()
        except NotFound:
            return []
        return sorted(body.get("tags") or [])

    def catalog(self) -> list[str]:
        body = self.transport.request("GET", f"{self.base}/_catalog?n=10000", scope="registry:catalog:*").json()
        return sorted(body.get("repositories") or [])

    # -- pushing ------------------------------------------------------------------------------
    def has_blob(self, path: str, digest: str) -> bool:
        try:
            self.transport.request("HEAD", f"{self.base}/{path}/blobs/{digest}", scope=self._scope(path, True))
        except NotFound:
            return False
        return True

    def push_blob(self, path: str, data: bytes) -> dict:
        digest = sha256(data)
        if not self.has_blob(path, digest):
            started = self.transport.request("POST", f"{self.base}/{path}/blobs/uploads/", ok=(202,),
                                             scope=self._scope(path, True))
            location = urljoin(self.base + "/", started.headers["Location"])
            self.transport.request("PUT", location, ok=(201,), scope=self._scope(path, True),
                                   params={"digest": digest}, data=data,
                                   headers={"Content-Type": "application/octet-stream"})
        return {"digest": digest, "size": len(data)}

    def push_manifest(self, path: str, tag: str, body: bytes) -> str:
        self.transport.request("PUT", f"{self.base}/{path}/manifests/{tag}", ok=(201,),
                               scope=self._scope(path, True), data=body, headers={"Content-Type": MANIFEST})
        return sha256(body)
