"""Reaching a Vault or OpenBao server: its unauthenticated state, logging in, streaming reads.

Tokens and secret ids are read from the files or environment variables the plan names, held
in the hvac client only, and never put in a message: errors say where the credential came
from, never what it is. A login (AppRole, Kubernetes) creates a token, which `session()`
revokes when the work is done.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from typing import Iterator

import hvac
import hvac.adapters
import hvac.exceptions
import requests
import urllib3.exceptions

from dr.kits.tls import flag, verify_setting

from dr.exporters.vault.options import AppRoleAuth, KubernetesAuth, TokenAuth, VaultOptions

# What a connection that breaks mid-stream raises from a streamed body.
STREAM_ERRORS = (urllib3.exceptions.HTTPError, requests.RequestException, OSError)


class VaultUnavailable(Exception):
    """The Vault cannot serve this request now (unreachable, sealed, not initialised, not raft)."""


class VaultAuthFailed(Exception):
    """The Vault refused the credential (the message names where it came from, not what it is)."""


@dataclass(frozen=True)
class VaultState:
    """What the unauthenticated endpoints say: sys/health and sys/leader."""

    address: str
    initialized: bool
    sealed: bool
    cluster_id: str
    version: str
    raft_index: int | None  # the raft committed index; None when the storage is not raft

    def usable(self) -> str:
        """Why this Vault cannot be backed up or restored into now; '' when it can."""
        if not self.initialized:
            return f"{self.address} is not initialised (bao operator init)"
        if self.sealed:
            return (f"{self.address} is sealed: a sealed Vault serves nothing; unseal it (the custodians' "
                    "key shares, or its auto-unseal key) and try again")
        if self.raft_index is None:
            return (f"{self.address} does not use integrated (raft) storage: raft snapshots need "
                    "storage \"raft\"")
        return ""


def new_client(options: VaultOptions, base_dir: str, address: str | None = None) -> hvac.Client:
    """A client with Vault's TLS conventions: the source's ca_cert / tls_skip_verify, else
    VAULT_CACERT, VAULT_CAPATH, VAULT_SKIP_VERIFY and VAULT_CLIENT_CERT/KEY, read now (hvac reads
    them when imported, and not at all when given `verify`), else the generic CA settings."""
    ca = os.path.join(base_dir, options.ca_cert) if options.ca_cert else None
    verify = verify_setting(ca, ("VAULT_CACERT", "VAULT_CAPATH"),
                            insecure=options.tls_skip_verify or (not ca and flag("VAULT_SKIP_VERIFY")))
    pair = (os.environ.get("VAULT_CLIENT_CERT"), os.environ.get("VAULT_CLIENT_KEY"))
    return hvac.Client(url=address or options.address, namespace=options.namespace, verify=verify,
                       cert=pair if all(pair) else None, timeout=options.timeout_seconds)


def read_state(client: hvac.Client) -> VaultState:
    """sys/health and sys/leader, which answer without a token (and while sealed)."""
    address = client.adapter.base_uri
    try:
        health = _json(client, "/v1/sys/health", params={"standbyok": "true", "sealedcode": "200",
                                                          "uninitcode": "200", "perfstandbyok": "true"})
        leader = {} if health.get("sealed") or not health.get("initialized") else \
            _json(client, "/v1/sys/leader")
    except requests.RequestException as exc:
        raise VaultUnavailable(f"{address} is unreachable: {type(exc).__name__}") from None
    index = leader.get("raft_committed_index")
    return VaultState(address, bool(health.get("initialized")), bool(health.get("sealed")),
                      str(health.get("cluster_id", "")), str(health.get("version", "")),
                      int(index) if index is not None else None)


def _json(client: hvac.Client, path: str, **kwargs) -> dict:
    response = client.adapter.request("GET", path, raise_exception=False, **kwargs)
    if isinstance(response, dict):
        return response
    try:
        return response.json()
    except ValueError:
        raise VaultUnavailable(f"{client.adapter.base_uri}{path} answered {response.status_code}, not JSON") from None


def _secret(path: str | None, env: str | None, base_dir: str, what: str) -> tuple[str, str]:
    """(the credential, where it came from) from a file or an environment variable."""
    if path is not None:
        full = os.path.join(base_dir, os.path.expanduser(path))
        try:
            with open(full, encoding="utf-8") as handle:
                value = handle.read().strip()
        except OSError as exc:
            raise VaultAuthFailed(f"cannot read the {what} file {full}: {exc.strerror}") from None
        where = f"the {what} file {full}"
    else:
        value = os.environ.get(env or "", "").strip()
        where = f"the environment variable {env}"
    if not value:
        raise VaultAuthFailed(f"{where} is empty or not set")
    return value, where


def log_in(client: hvac.Client, options: VaultOptions, base_dir: str) -> bool:
    """Authenticate `client` as the plan says. True when it made a token (to revoke after)."""
    auth = options.auth
    address = client.adapter.base_uri
    try:
        if isinstance(auth, TokenAuth):
            client.token, where = _secret(auth.token_file, auth.token_env, base_dir, "token")
            _check_token(client, f"{address} refused the token from {where}")
            return False
        if isinstance(auth, AppRoleAuth):
            secret_id, where = _secret(auth.secret_id_file, auth.secret_id_env, base_dir, "AppRole secret id")
            client.auth.approle.login(auth.role_id, secret_id, mount_point=auth.mount)
            return True
        if isinstance(auth, KubernetesAuth):
            jwt, where = _secret(auth.jwt_file, None, base_dir, "service-account token")
            client.auth.kubernetes.login(auth.role, jwt, mount_point=auth.mount)
            return True
    except (hvac.exceptions.Forbidden, hvac.exceptions.InvalidRequest, hvac.exceptions.Unauthorized) as exc:
        raise VaultAuthFailed(f"{address} refused the {auth.method} login with {where}: "
                              f"{_first_error(exc)}") from None
    except requests.RequestException as exc:
        raise VaultUnavailable(f"{address} is unreachable: {type(exc).__name__}") from None
    raise AssertionError(f"unknown auth method {auth!r}")


def try_token(client: hvac.Client, token: str) -> bool:
    """Use `token` if the Vault accepts it (the restore's target token)."""
    previous, client.token = client.token, token
    try:
        _check_token(client, "")
        return True
    except (VaultAuthFailed, hvac.exceptions.VaultError):
        client.token = previous
        return False


def _check_token(client: hvac.Client, refused: str) -> None:
    try:
        client.auth.token.lookup_self()
    except (hvac.exceptions.Forbidden, hvac.exceptions.Unauthorized) as exc:
        raise VaultAuthFailed(f"{refused}: {_first_error(exc)}") from None


def _first_error(exc: Exception) -> str:
    errors = getattr(exc, "errors", None) or [str(exc).split(", on ", 1)[0]]
    return str(errors[0]) if errors else type(exc).__name__


@contextlib.contextmanager
def session(options: VaultOptions, base_dir: str, address: str | None = None,
            client: hvac.Client | None = None) -> Iterator[hvac.Client]:
    """A logged-in client (`client`, logged in, when given); a token made by a login is revoked
    at the end."""
    client = client or new_client(options, base_dir, address)
    made = log_in(client, options, base_dir)
    try:
        yield client
    finally:
        if made:
            with contextlib.suppress(Exception):  # it expires anyway; never fail a backup over it
                client.auth.token.revoke_self()
        client.adapter.close()


def stream(client: hvac.Client, path: str) -> requests.Response:
    """GET `path` as a stream of raw bytes (the raft snapshot); raises on an error status."""
    raw = hvac.adapters.RawAdapter.from_adapter(client.adapter)  # the JSON adapter would read it all
    response = raw.request("GET", path, stream=True, raise_exception=False)
    if not isinstance(response, requests.Response) or not response.ok:
        status = getattr(response, "status_code", "?")
        detail = ""
        with contextlib.suppress(Exception):
            detail = "; ".join(response.json().get("errors", []))
            response.close()
        raise VaultUnavailable(f"{client.adapter.base_uri}{path} answered {status}{': ' + detail if detail else ''}")
    return response
