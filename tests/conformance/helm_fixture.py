"""Conformance fixture of the helm exporter: an HTTP chart repository served from a folder (two
charts, one with a .prov); each destination is a new directory chart repository."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Hashable

import yaml

from dr.exporters.helm import HelmExporter
from dr.testing import ConformanceFixture
from tests.conformance.builtin_fixtures import _Destinations, tree_fingerprint
from tests.helm.charts import ChartServer, make_chart, provenance, write_index
from tests.servers import free_port


class HelmFixture(_Destinations, ConformanceFixture):
    exporter = HelmExporter

    def __init__(self) -> None:
        self.server: ChartServer | None = None

    def build_source(self, workdir: str) -> None:
        self.workdir = workdir
        folder = Path(workdir, "chart-repository")
        folder.mkdir()
        for name, version in (("alpha", "1.0.0"), ("beta", "2.0.0")):
            data = make_chart(name, version)
            (folder / f"{name}-{version}.tgz").write_bytes(data)
        (folder / "alpha-1.0.0.tgz.prov").write_bytes(provenance("alpha", "1.0.0",
                                                                 (folder / "alpha-1.0.0.tgz").read_bytes()))
        write_index(folder)
        self.server = ChartServer(folder)

    def source_options(self) -> dict[str, Any]:
        return {"charts": [{"repo": self.server.url, "name": "alpha", "version": "1.0.0"},
                           {"repo": self.server.url, "name": "beta", "version": "2.0.0"}]}

    def broken_options(self) -> dict[str, Any]:
        return {"timeout_seconds": 5,
                "charts": [{"repo": f"http://127.0.0.1:{free_port()}", "name": "alpha", "version": "1.0.0"}]}

    def destination(self) -> str:
        return self.new_directory()

    def fingerprint(self, to: str) -> Hashable:
        """Each file's digest, and index.yaml's entries by name, version, digest and url: what a
        client of the repository reads (not file modes, nor the index's timestamps)."""
        if not Path(to).is_dir():
            return None
        index = Path(to, "index.yaml")
        entries = yaml.safe_load(index.read_text()).get("entries", {}) if index.exists() else {}
        listed = sorted((name, e["version"], e.get("digest"), tuple(e.get("urls", [])))
                        for name, versions in entries.items() for e in versions)
        files = sorted((path, digest) for path, digest, _, _ in tree_fingerprint(to, times=False)
                       if path != "index.yaml")
        return tuple(files), tuple(listed)

    def perturb(self, to: str) -> str:
        Path(to, "beta-2.0.0.tgz").write_bytes(make_chart("beta", "2.0.0", note="changed at the destination"))
        return f"{self.server.url}/beta:2.0.0"

    def source_fingerprint(self) -> Hashable:
        return self.fingerprint(str(Path(self.workdir, "chart-repository")))

    def change_source(self) -> str:
        """beta 2.0.0 published again with other content (a mutable version, as repositories allow)."""
        folder = Path(self.workdir, "chart-repository")
        (folder / "beta-2.0.0.tgz").write_bytes(make_chart("beta", "2.0.0", note="changed at the source"))
        write_index(folder)
        return f"{self.server.url}/beta:2.0.0"

    def close(self) -> None:
        if self.server is not None:
            self.server.stop()
            self.server = None
