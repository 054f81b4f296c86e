"""The dns exporter's ConformanceFixture: two zones on a real bind9, read by AXFR; each destination
is a new bind9 holding the same zones empty, written by RFC 2136 updates."""

from __future__ import annotations

import os
from typing import Any, Hashable

import dns.query
import dns.update

from dr.exporters.dns import DnsExporter
from dr.exporters.dns.records import ZoneDocument, item_names
from dr.testing import ConformanceFixture
from tests.dns.conftest import SOA, axfr
from tests.servers import NamedServer

ZONES = {"platform.test": SOA + "www 300 IN A 10.0.0.10\napi IN CNAME ingress.cluster-a.example.internal.\n"
                                "@ IN MX 10 mail\nmail IN A 10.0.0.25\ninfo IN HINFO \"x86\" \"Linux\"\n",
         "models.test": SOA + "serve 60 IN A 10.0.1.10\nserve 60 IN A 10.0.1.11\n_grpc._tcp IN SRV 0 5 8443 serve\n"}


class DnsFixture(ConformanceFixture):
    exporter = DnsExporter

    def __init__(self) -> None:
        self.servers: dict[str, NamedServer] = {}

    def _server(self, name: str, zones: dict[str, str]) -> NamedServer:
        server = NamedServer(os.path.join(os.path.dirname(self.workdir), f"bind-{name}"),
                             {zone: {"records": records} for zone, records in zones.items()}).start()
        self.servers[name] = server
        return server

    def build_source(self, workdir: str) -> None:
        self.workdir = workdir
        self._server("source", ZONES)

    def source_options(self) -> dict[str, Any]:
        axfr = {"server": "127.0.0.1", "port": self.servers["source"].port}
        return {"zones": [{"zone": zone, "axfr": axfr} for zone in ZONES]}

    def broken_options(self) -> dict[str, Any]:
        return {"zones": [{"zone": "gone.test", "axfr": {"server": "127.0.0.1", "port": 9}}], "timeout_seconds": 1}

    def destination(self) -> str:
        server = self._server(f"destination-{len(self.servers)}", {zone: SOA for zone in ZONES})
        return f"dns://127.0.0.1:{server.port}"

    def fingerprint(self, to: str) -> Hashable:
        port = int(to.rsplit(":", 1)[1])
        return tuple(sorted((zone, *record) for zone in ZONES for record in axfr(port, zone)))

    def perturb(self, to: str) -> str:
        update = dns.update.UpdateMessage("platform.test")
        update.replace("www", 300, "A", "10.9.9.9")
        dns.query.tcp(update, "127.0.0.1", port=int(to.rsplit(":", 1)[1]), timeout=5)
        return "www.platform.test. A"

    def source_fingerprint(self) -> Hashable:
        return self.fingerprint(f"dns://127.0.0.1:{self.servers['source'].port}")

    def change_source(self) -> str:
        update = dns.update.UpdateMessage("models.test")
        update.add("serve", 60, "A", "10.0.1.12")
        dns.query.tcp(update, "127.0.0.1", port=self.servers["source"].port, timeout=5)
        return "models.test"

    def expected_items(self, artifacts, reader) -> set[str]:
        """One item per record (and per unmodelled record set), named `FQDN TYPE`."""
        return set().union(*(item_names(ZoneDocument.from_bytes(reader.read(a))) for a in artifacts))

    def close(self) -> None:
        for server in self.servers.values():
            server.stop()
