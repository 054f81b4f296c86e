"""Registry credentials, the kit's one resolver (dr.kits.oci; the images and helm exporters use it):
docker `config.json` (a file the plan names, else the usual places), docker credential helpers,
and ECR through boto3.

Never printed: a `Credential`'s repr hides its secret, and errors name the host only.

Where to look, first match wins:
  1. the plan's `auth_file` (docker config.json format)
  2. the Kubernetes pull secrets the plan names (`pull_secrets`: `namespace/name`, read once
     per run through the plan's `kubeconfig`/`context`): `.dockerconfigjson` is the same
     format, the legacy `.dockercfg` is its `auths` alone
  3. the usual files: $REGISTRY_AUTH_FILE, $DOCKER_CONFIG/config.json, ~/.docker/config.json
     (the order docker, podman and skopeo use; `docker_files()`), or the files a caller names
     instead (`default_files`: helm puts its own registry config first)
In a file: `auths[host]` (`auth` = base64 user:password, or `username`/`password`, or
`identitytoken`), then `credHelpers[host]` / `credsStore` (runs `docker-credential-<name> get`).
A host ending in `.amazonaws.com` with `dkr.ecr` in it and no entry gets an ECR token
(`ecr:GetAuthorizationToken`) when boto3 can find AWS credentials.
Each credential says where it was found (`source`: "auth_file PATH", a file, a pull secret, a
credential helper, ECR), so a refusal can name the place to fix without naming the secret.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
from dataclasses import dataclass, field, replace
from typing import Callable, Iterator


@dataclass(frozen=True)
class Credential:
    username: str
    password: str = field(repr=False)
    identity_token: bool = False  # an OAuth refresh token: sent as such to the token realm
    source: str = field(default="", compare=False)  # where it was found, for messages

    def __str__(self) -> str:
        return f"{self.username}:***"


class Credentials:
    """Credentials by registry host, looked up once per host.

    auth_file: the file the plan names (first); ecr: ask ECR for its hosts; pull_secrets: the
    docker configs of Kubernetes pull secrets, read once; default_files: the files looked in
    after those (None: `docker_files()`, read when a host is looked up)."""

    def __init__(self, auth_file: str | None = None, *, ecr: bool = True,
                 pull_secrets: Callable[[], list[dict]] = lambda: [],
                 default_files: list[str] | None = None) -> None:
        self.auth_file = auth_file
        self._ecr = ecr
        self._cache: dict[str, Credential | None] = {}
        self._pull_secrets = pull_secrets
        self._secret_configs: list[dict] | None = None
        self._default_files = default_files

    def load(self) -> None:
        """Read the pull secrets now (once): a failure is the backup's, with its reason."""
        if self._secret_configs is None:
            self._secret_configs = self._pull_secrets()

    def for_host(self, host: str) -> Credential | None:
        if host not in self._cache:
            self._cache[host] = self._lookup(host)
        return self._cache[host]

    def _configs(self) -> Iterator[tuple[str, dict | None]]:
        """(where, config) in the order they are looked in."""
        if self.auth_file:
            yield f"auth_file {self.auth_file}", _read(self.auth_file)
        self.load()
        yield from (("a pull secret", config) for config in self._secret_configs or [])
        for path in docker_files() if self._default_files is None else self._default_files:
            yield path, _read(path)

    def _lookup(self, host: str) -> Credential | None:
        for where, config in self._configs():
            found = from_config(config, host) if config is not None else None
            if found is not None:
                return replace(found, source=f"{where} (its {found.source})" if found.source else where)
        if self._ecr and ".dkr.ecr." in host and host.endswith(".amazonaws.com"):
            return ecr_credential(host)
        return None


def docker_files() -> list[str]:
    """The files docker, podman and skopeo read, in their order."""
    files = []
    if os.environ.get("REGISTRY_AUTH_FILE"):
        files.append(os.environ["REGISTRY_AUTH_FILE"])
    folder = os.environ.get("DOCKER_CONFIG") or os.path.join(os.path.expanduser("~"), ".docker")
    files.append(os.path.join(folder, "config.json"))
    return files


def _read(path: str) -> dict | None:
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise ValueError(f"registry credentials file {path}: {exc.__class__.__name__}") from None
    return data if isinstance(data, dict) else None


def _hub_keys(host: str) -> list[str]:
    if host in ("docker.io", "registry-1.docker.io", "index.docker.io"):
        return ["https://index.docker.io/v1/", "index.docker.io", "docker.io", "registry-1.docker.io"]
    return [host, f"https://{host}", f"http://{host}", f"https://{host}/v1/", f"https://{host}/v2/"]


def from_config(config: dict, host: str) -> Credential | None:
    auths = config.get("auths") or {}
    for key in _hub_keys(host):
        entry = auths.get(key)
        if isinstance(entry, dict):
            found = _entry(entry)
            if found:
                return found
    helper = (config.get("credHelpers") or {}).get(host) or config.get("credsStore")
    return _helper(helper, host) if helper else None


def _entry(entry: dict) -> Credential | None:
    if entry.get("identitytoken"):
        return Credential("<token>", entry["identitytoken"], identity_token=True)
    if entry.get("auth"):
        user, _, password = base64.b64decode(entry["auth"]).decode().partition(":")
        return Credential(user, password)
    if entry.get("username"):
        return Credential(entry["username"], entry.get("password", ""))
    return None


def _helper(name: str, host: str) -> Credential | None:
    try:
        done = subprocess.run([f"docker-credential-{name}", "get"], input=host, capture_output=True,
                              text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode != 0:
        return None
    data = json.loads(done.stdout or "{}")
    source = f"credential helper docker-credential-{name}"
    if data.get("Username") == "<token>":
        return Credential("<token>", data.get("Secret", ""), identity_token=True, source=source)
    return Credential(data.get("Username", ""), data.get("Secret", ""), source=source) if data.get("Secret") else None


def ecr_credential(host: str) -> Credential | None:
    """An ECR authorization token for `<account>.dkr.ecr.<region>.amazonaws.com` (12 h valid)."""
    try:
        import boto3
    except ImportError:  # boto3 is optional for a third party; dr itself depends on it
        return None
    parts = host.split(".")
    account, region = parts[0], parts[3]
    try:
        answer = boto3.client("ecr", region_name=region).get_authorization_token(registryIds=[account])
    except Exception:  # no AWS credentials: the registry's 401 will say so
        return None
    token = answer["authorizationData"][0]["authorizationToken"]
    user, _, password = base64.b64decode(token).decode().partition(":")
    return Credential(user, password, source="ECR (an ecr:GetAuthorizationToken token)")
