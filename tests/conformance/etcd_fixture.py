"""The etcd exporter's ConformanceFixture: two real one-member etcd clusters (Debian etcd-server),
each restored as one snapshot file into a new directory."""

from __future__ import annotations

import hashlib
import os
from typing import Any, Hashable

from dr.exporters.etcd import EtcdExporter
from dr.testing import ConformanceFixture
from tests.etcd.conftest import fill, put, snapshot
from tests.servers import etcd_server


class EtcdFixture(ConformanceFixture):
    exporter = EtcdExporter
    names = ("control-plane", "events")

    def __init__(self) -> None:
        self.servers = []
        self.made = 0

    def build_source(self, workdir: str) -> None:
        self.workdir = workdir
        for name in self.names:
            server = etcd_server(os.path.join(workdir, f"etcd-{name}"), name=name).start()
            self.servers.append(server)
            fill(f"http://127.0.0.1:{server.port}", {f"/registry/{name}/{n}": f"value {n}" for n in range(5)})

    def source_options(self) -> dict[str, Any]:
        return {"clusters": [{"name": name, "endpoints": [f"http://127.0.0.1:{server.port}"]}
                             for name, server in zip(self.names, self.servers)]}

    def broken_options(self) -> dict[str, Any]:
        return {"clusters": [{"name": "gone", "endpoints": ["http://127.0.0.1:9"]}], "timeout_seconds": 2}

    def destination(self) -> str:
        self.made += 1
        return os.path.join(os.path.dirname(self.workdir), f"etcd-destination-{self.made}")

    def fingerprint(self, to: str) -> Hashable:
        if not os.path.isdir(to):
            return None
        found = []
        for name in sorted(os.listdir(to)):
            with open(os.path.join(to, name), "rb") as handle:
                found.append((name, hashlib.file_digest(handle, "sha256").hexdigest()))
        return tuple(found)

    def perturb(self, to: str) -> str:
        with open(os.path.join(to, "events.db"), "r+b") as handle:
            handle.seek(100)
            handle.write(b"changed at the destination")
        return "events"

    def source_fingerprint(self) -> Hashable:
        """A snapshot of each cluster now, as the restore names its file (<cluster>.db)."""
        found = []
        for name, server in zip(self.names, self.servers):
            found.append((f"{name}.db", hashlib.sha256(snapshot(f"http://127.0.0.1:{server.port}")).hexdigest()))
        return tuple(sorted(found))

    def change_source(self) -> str:
        put(f"http://127.0.0.1:{self.servers[1].port}", "/registry/events/5", "value 5")
        return "events"

    def close(self) -> None:
        for server in self.servers:
            server.stop()
