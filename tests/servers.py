"""Real servers for tests, started and stopped by the test session itself.

Each server runs in its own session (setsid), so stopping it kills the whole process group,
children included, by the group id we started: nothing is found or killed by name.
Ports are free loopback ports picked at start; a port stolen between picking and binding
shows up as an early exit, and the start is retried on a new port.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def venv_tool(name: str) -> str:
    """A console script installed next to the running interpreter (the venv's bin)."""
    candidate = Path(sys.executable).parent / name
    if candidate.exists():
        return str(candidate)
    found = shutil.which(name)
    if not found:
        raise RuntimeError(f"{name} not found next to {sys.executable} or on PATH")
    return found


class ServerProcess:
    """One server in its own process group, with its output in a log file."""

    def __init__(self, argv_for_port, ready_url_for_port, name: str, timeout: float = 20.0):
        self._argv_for_port = argv_for_port
        self._ready_url_for_port = ready_url_for_port
        self.name = name
        self.timeout = timeout
        self.port: int | None = None
        self.process: subprocess.Popen | None = None
        self.log_path = Path(tempfile.mkdtemp(prefix=f"dr-{name}-")) / "server.log"

    def start(self, tries: int = 3) -> "ServerProcess":
        for _ in range(tries):
            self.port = free_port()
            with open(self.log_path, "ab") as log:
                self.process = subprocess.Popen(
                    ["setsid", *self._argv_for_port(self.port)],
                    stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                )
            if self._wait_ready():
                return self
            self.stop()
        raise RuntimeError(f"{self.name} did not start; log: {self.log_path}\n{self.log_tail()}")

    def _wait_ready(self) -> bool:
        # No proxies for loopback, whatever the environment says.
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                return False
            try:
                with opener.open(self._ready_url_for_port(self.port), timeout=1):
                    return True
            except OSError:
                time.sleep(0.05)
        return False

    def stop(self) -> None:
        if self.process is None:
            return
        # setsid execs in place, so the child's pid is the group id.
        pgid = self.process.pid
        for sig, grace in ((signal.SIGTERM, 5.0), (signal.SIGKILL, 5.0)):
            try:
                os.killpg(pgid, sig)
            except ProcessLookupError:
                break
            try:
                self.process.wait(timeout=grace)
                break
            except subprocess.TimeoutExpired:
                continue
        self.process = None

    def log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def __enter__(self) -> "ServerProcess":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def moto_server() -> ServerProcess:
    """moto's S3 (and other AWS APIs) over HTTP; state lives as long as the process."""
    tool = venv_tool("moto_server")
    return ServerProcess(
        lambda port: [tool, "-H", "127.0.0.1", "-p", str(port)],
        lambda port: f"http://127.0.0.1:{port}/moto-api/",
        name="moto",
    )


def etcd_server(data_dir: str, name: str = "default", extra: tuple[str, ...] = ()) -> ServerProcess:
    """A one-member etcd (Debian etcd-server) on free loopback ports, its data in `data_dir`.

    The client port is the ServerProcess's port; the peer port is picked with it. An existing
    data directory (one `etcdctl snapshot restore` made) is started as it is: the name and peer
    URL must then be the ones it was restored with (`peer_port` below)."""
    server: ServerProcess

    def argv(port: int) -> list[str]:
        server.peer_port = getattr(server, "fixed_peer_port", None) or free_port()
        client, peer = f"http://127.0.0.1:{port}", f"http://127.0.0.1:{server.peer_port}"
        return ["etcd", "--data-dir", data_dir, "--name", name, "--listen-client-urls", client,
                "--advertise-client-urls", client, "--listen-peer-urls", peer,
                "--initial-advertise-peer-urls", peer, "--initial-cluster", f"{name}={peer}", *extra]

    server = ServerProcess(argv, lambda port: f"http://127.0.0.1:{port}/health", name="etcd")
    return server


class NamedServer(ServerProcess):
    """An authoritative bind9 (`named -g`) on a free loopback port, ready when it answers a SOA query.

    zones: {zone name: {"records": zone-file body after $ORIGIN/$TTL, "transfer": ACL,
    "update": ACL}}; ACLs are bind's (`127.0.0.1;`, `key dr-test;`, `none;`). `keys`: {name:
    base64 secret} (hmac-sha256). Files live in `folder` (writable: dynamic updates journal there).
    """

    def __init__(self, folder: str, zones: dict[str, dict], keys: dict[str, str] | None = None) -> None:
        self.folder, self.zones, self.keys = folder, zones, keys or {}
        os.makedirs(folder, exist_ok=True)
        super().__init__(self._argv, None, name="named")

    def _argv(self, port: int) -> list[str]:
        conf = os.path.join(self.folder, "named.conf")
        blocks = [f'key "{name}" {{ algorithm hmac-sha256; secret "{secret}"; }};' for name, secret in self.keys.items()]
        blocks.append(f'options {{ directory "{self.folder}"; listen-on port {port} {{ 127.0.0.1; }}; '
                      f'listen-on-v6 {{ none; }}; recursion no; pid-file "{self.folder}/named.pid"; '
                      f'session-keyfile "{self.folder}/session.key"; notify no; }};')
        blocks.append("controls { };")
        for zone, spec in self.zones.items():
            path = os.path.join(self.folder, f"{zone}.zone")
            if not os.path.exists(path):
                Path(path).write_text(f"$ORIGIN {zone}.\n$TTL 300\n{spec['records']}\n")
            blocks.append(f'zone "{zone}" {{ type primary; file "{path}"; '
                          f'allow-transfer {{ {spec.get("transfer", "127.0.0.1;")} }}; '
                          f'allow-update {{ {spec.get("update", "127.0.0.1;")} }}; }};')
        Path(conf).write_text("\n".join(blocks) + "\n")
        return ["named", "-g", "-u", "root", "-c", conf]

    def _wait_ready(self) -> bool:
        import dns.message
        import dns.query
        import dns.rcode

        zone = next(iter(self.zones))
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                return False
            try:
                answer = dns.query.udp(dns.message.make_query(zone, "SOA"), "127.0.0.1", port=self.port, timeout=0.5)
                # named answers SERVFAIL while a large zone is still loading: ready is the SOA itself
                # (a 50,000-record zone once failed its first AXFR in bench_dns.py on that)
                if answer.rcode() == dns.rcode.NOERROR and answer.answer:
                    return True
            except Exception:  # not listening yet, or no answer yet
                pass
            time.sleep(0.05)
        return False
def mlflow_server(folder: str, artifact_root: str | None = None, s3_endpoint: str | None = None) -> ServerProcess:
    """A real MLflow tracking server + model registry: sqlite backend in `folder`, artifact root
    `artifact_root` (default: a file:// folder in `folder`; an s3:// one on `s3_endpoint`), one
    worker, the job runner off (MLflow 3 otherwise forks ~10 processes, ~1.8 GB)."""
    tool = venv_tool("mlflow")
    os.makedirs(folder, exist_ok=True)
    s3 = [f"MLFLOW_S3_ENDPOINT_URL={s3_endpoint}"] if s3_endpoint else []
    env_tool = ["env", "-u", "MLFLOW_TRACKING_URI", "MLFLOW_SERVER_ENABLE_JOB_EXECUTION=false", *s3, tool]
    root = artifact_root or f"file://{os.path.abspath(folder)}/artifacts"
    return ServerProcess(
        lambda port: [*env_tool, "server", "--host", "127.0.0.1", "--port", str(port), "--workers", "1",
                      "--backend-store-uri", f"sqlite:///{os.path.abspath(folder)}/mlflow.db",
                      "--default-artifact-root", root],
        lambda port: f"http://127.0.0.1:{port}/health",
        name="mlflow", timeout=90.0,
    )
