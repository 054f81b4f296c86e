"""Helm charts in an OCI registry, as `helm push` stores them, through the kit's registry client
(dr.kits.oci: the distribution API, auth challenges, credentials; shared with the images exporter).

A chart is a manifest whose config has media type CONFIG (the chart's metadata as JSON), with
one CHART layer (the .tgz) and, when signed, one PROVENANCE layer (the .prov). Every blob read
is checked against its digest; a manifest's digest against the one asked for (or the one the
registry states). The kit's errors become the helm exporter's ChartError (NotFound for a 404),
a refusal worded by dr.exporters.helm.logins (which login was missing or refused, and where).
Like helm's other requests, one attempt each: the kit client is built with no retries.
"""

from __future__ import annotations

import hashlib
import io
import json
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable, Iterator

import requests

from dr.exporters.helm.logins import ELSEWHERE, refused
from dr.exporters.helm.transport import ChartError, NotFound
from dr.kits.oci import errors
from dr.kits.oci.client import Manifest, RegistryClient
from dr.kits.oci.credentials import Credentials
from dr.kits.oci.streams import HashingReader

CONFIG = "application/vnd.cncf.helm.config.v1+json"
CHART = "application/vnd.cncf.helm.chart.content.v1.tar+gzip"
PROVENANCE = "application/vnd.cncf.helm.chart.provenance.v1.prov"
MANIFEST = "application/vnd.oci.image.manifest.v1+json"
UPLOAD_CHUNK = 32 << 20  # charts are small: one PUT each, as helm push sends them


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
    """One registry host, its kit client made on first use (the credential lookup may fail)."""

    def __init__(self, host: str, scheme: str, logins: Credentials, *, verify_tls: bool | str = True,
                 timeout: float = 30.0) -> None:
        self.host, self.scheme, self.logins = host, scheme, logins
        self._settings = {"verify_tls": verify_tls, "timeout": timeout}
        self._client: RegistryClient | None = None

    def _call(self, work: Callable[[RegistryClient], object]):
        with self._translated():
            if self._client is None:
                self._client = RegistryClient(self.host, scheme=self.scheme, credential=self.logins.for_host(self.host),
                                              retries=0, **self._settings)
            return work(self._client)

    @contextmanager
    def _translated(self) -> Iterator[None]:
        """The kit's errors as ChartError, worded for a chart source."""
        try:
            yield
        except errors.NotFound as exc:
            raise NotFound(str(exc)) from None
        except errors.Unauthorized:
            raise ChartError(f"{self.scheme}://{self.host}: {refused(self.logins, self.host, ELSEWHERE)}") from None
        except (errors.RegistryError, ValueError) as exc:  # ValueError: a credentials file unread
            raise ChartError(str(exc)) from None
        except requests.RequestException as exc:
            raise ChartError(f"{self.scheme}://{self.host}: cannot connect ({exc.__class__.__name__})") from None

    def manifest(self, path: str, reference: str) -> tuple[str, bytes]:
        manifest = self._call(lambda client: client.get_manifest(path, reference))
        return manifest.digest, manifest.body

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
        def read(client: RegistryClient) -> bytes:
            response = client.open_blob(path, digest)
            try:
                return response.content
            finally:
                response.close()
        body = self._call(read)
        if sha256(body) != digest:
            raise ChartError(f"{self.host}/{path}@{digest}: the registry served bytes whose digest is "
                             f"{sha256(body)}")
        return body

    def tags(self, path: str) -> list[str]:
        try:
            return sorted(self._call(lambda client: client.tags(path)))
        except NotFound:
            return []

    def catalog(self) -> list[str]:
        return sorted(self._call(lambda client: client.catalog()))

    # -- pushing ------------------------------------------------------------------------------
    def push_blob(self, path: str, data: bytes) -> dict:
        digest = sha256(data)

        def push(client: RegistryClient) -> None:
            if client.has_blob(path, digest) is None:
                body = HashingReader(io.BytesIO(data), digest, len(data), f"{self.host}/{path}@{digest}")
                client.upload_blob(path, digest, body, len(data), UPLOAD_CHUNK)
        self._call(push)
        return {"digest": digest, "size": len(data)}

    def push_manifest(self, path: str, tag: str, body: bytes) -> str:
        digest = sha256(body)
        self._call(lambda client: client.put_manifest(path, tag, Manifest(body, MANIFEST, digest)))
        return digest
