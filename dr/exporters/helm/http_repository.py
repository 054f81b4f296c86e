"""An HTTP chart repository: `index.yaml`, the `.tgz` it points at, and the `.prov` beside it."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urljoin

import yaml

from dr.exporters.helm.transport import ChartError, NotFound, Transport


@dataclass
class Entry:
    """One chart version as index.yaml lists it."""

    name: str
    version: str
    url: str  # absolute
    digest: str  # sha256:<hex>, or "" when the index gives none
    created: str


class HttpRepository:
    def __init__(self, transport: Transport, url: str) -> None:
        self.transport, self.url = transport, url.rstrip("/")
        self._index: dict | None = None

    def index(self) -> dict:
        if self._index is None:
            where = f"{self.url}/index.yaml"
            try:
                data = yaml.safe_load(self.transport.get(where))
            except yaml.YAMLError as exc:
                raise ChartError(f"{where}: not a chart repository index ({exc.__class__.__name__})") from None
            if not isinstance(data, dict) or not isinstance(data.get("entries"), dict):
                raise ChartError(f"{where}: not a chart repository index (no entries)")
            self._index = data
        return self._index

    def entries(self, name: str) -> list[Entry]:
        return [self._entry(name, e) for e in self.index()["entries"].get(name) or [] if isinstance(e, dict)]

    def names(self) -> list[str]:
        return sorted(self.index()["entries"])

    def entry(self, name: str, version: str) -> Entry:
        found = [e for e in self.entries(name) if e.version == version]
        if not found:
            known = ", ".join(e.version for e in self.entries(name)[:10]) or "none"
            raise NotFound(f"{self.url}/index.yaml lists no {name} version {version} (versions: {known})")
        return found[0]

    def _entry(self, name: str, data: dict) -> Entry:
        urls = data.get("urls") or []
        if not urls:
            raise ChartError(f"{self.url}/index.yaml: {name} {data.get('version')} has no urls")
        digest = str(data.get("digest") or "")
        return Entry(name, str(data.get("version") or ""), urljoin(self.url + "/", str(urls[0])),
                     f"sha256:{digest}" if digest and ":" not in digest else digest, str(data.get("created") or ""))

    def chart(self, entry: Entry) -> bytes:
        return self.transport.get(entry.url)

    def provenance(self, entry: Entry) -> bytes | None:
        """The `.prov` beside the chart, or None when the repository keeps none."""
        try:
            return self.transport.get(entry.url + ".prov")
        except NotFound:
            return None
