"""A real Pushgateway and a real Prometheus scraping it every second (honor_labels, as a
Pushgateway must be scraped), shared by the session: Debian's prometheus-pushgateway and
prometheus (scripts/install-test-deps)."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
import urllib.parse
import urllib.request

import pytest

from tests.servers import ServerProcess

LOOPBACK = urllib.request.build_opener(urllib.request.ProxyHandler({}))


class Prometheus(ServerProcess):
    def __init__(self, gateway_port: int):
        self.folder = tempfile.mkdtemp(prefix="dr-prometheus-")
        config = os.path.join(self.folder, "prometheus.yml")
        with open(config, "w", encoding="utf-8") as handle:
            handle.write("global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
                         "scrape_configs:\n"
                         "  - job_name: pushgateway\n"
                         "    honor_labels: true\n"
                         f"    static_configs: [{{targets: ['127.0.0.1:{gateway_port}']}}]\n")
        super().__init__(lambda port: ["prometheus", f"--config.file={config}",
                                       f"--storage.tsdb.path={self.folder}/data",
                                       f"--web.listen-address=127.0.0.1:{port}"],
                         lambda port: f"http://127.0.0.1:{port}/-/ready", name="prometheus", timeout=30.0)

    def query(self, promql: str) -> dict:
        """The /api/v1/query answer (status and data), errors included."""
        url = f"http://127.0.0.1:{self.port}/api/v1/query?" + urllib.parse.urlencode({"query": promql})
        try:
            with LOOPBACK.open(url, timeout=5) as response:
                return json.load(response)
        except urllib.error.HTTPError as exc:  # a bad query answers 400 with a JSON error
            return json.load(exc)

    def values(self, promql: str) -> dict[tuple, float]:
        """{sorted label items without __name__: value} of an instant vector."""
        answer = self.query(promql)
        assert answer["status"] == "success", answer
        return {tuple(sorted((k, v) for k, v in r["metric"].items() if k != "__name__")): float(r["value"][1])
                for r in answer["data"]["result"]}

    def wait_for(self, promql: str, predicate, timeout: float = 15.0) -> dict[tuple, float]:
        """Poll until predicate(values) holds: the next scrape brings a push within ~1 s."""
        deadline = time.monotonic() + timeout
        while True:
            found = self.values(promql)
            if predicate(found) or time.monotonic() > deadline:
                return found
            time.sleep(0.25)


@pytest.fixture(scope="session")
def pushgateway():
    # Debian's build persists to /var/lib/prometheus/pushgateway.data by default: every test
    # session (and every other user of the machine) would share its groups. Memory only.
    server = ServerProcess(lambda port: ["prometheus-pushgateway", f"--web.listen-address=127.0.0.1:{port}",
                                         "--persistence.file="],
                           lambda port: f"http://127.0.0.1:{port}/-/ready", name="pushgateway")
    with server:
        yield f"http://127.0.0.1:{server.port}"


@pytest.fixture(scope="session")
def prometheus(pushgateway):
    server = Prometheus(int(pushgateway.rsplit(":", 1)[1]))
    with server:
        yield server
    shutil.rmtree(server.folder, ignore_errors=True)
