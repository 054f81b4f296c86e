"""Credentials for chart registries and repositories, from a docker `config.json`.

The file `docker login` and `helm registry login` write (helm keeps its own at
`~/.config/helm/registry/config.json`): `auths` maps a host (or a URL naming it,
`https://index.docker.io/v1/`) to `auth` (base64 of `user:password`) or `username` and
`password`. Identity tokens and credential helpers (`credsStore`, `credHelpers`) are not read:
a host with only those has no credentials here, and the error that follows says so. The values
never leave this module except in an Authorization header.
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass, field
from urllib.parse import urlsplit


class CredentialsError(ValueError):
    """The file cannot be read; the message names it and why (never a credential)."""


@dataclass(frozen=True)
class Login:
    username: str
    password: str = field(repr=False)


def _host(key: str) -> str:
    text = key.strip()
    return (urlsplit(text).netloc if "://" in text else text.split("/", 1)[0]).lower()


def _login(entry: dict) -> Login | None:
    if entry.get("auth"):
        try:
            user, sep, password = base64.b64decode(str(entry["auth"])).decode().partition(":")
        except (binascii.Error, UnicodeDecodeError):
            return None
        return Login(user, password) if sep else None
    if entry.get("username") and entry.get("password"):
        return Login(str(entry["username"]), str(entry["password"]))
    return None


class Credentials:
    """host -> Login, read once from `path` (None: no credentials at all)."""

    def __init__(self, path: str | None = None) -> None:
        self.path = path
        self._logins: dict[str, Login] | None = None if path else {}

    def for_host(self, host: str) -> Login | None:
        if self._logins is None:
            self._logins = self._read()
        return self._logins.get(host.lower())

    def _read(self) -> dict[str, Login]:
        try:
            with open(self.path or "", encoding="utf-8") as handle:
                data = json.load(handle)
        except OSError as exc:
            raise CredentialsError(f"auth_file {self.path}: cannot read it ({exc.strerror})") from None
        except ValueError:
            raise CredentialsError(f"auth_file {self.path}: not JSON (a docker config.json is expected)") from None
        auths = data.get("auths") if isinstance(data, dict) else None
        if not isinstance(auths, dict):
            raise CredentialsError(f"auth_file {self.path}: no `auths` object (a docker config.json is expected)")
        logins = {}
        for key, entry in auths.items():
            login = _login(entry) if isinstance(entry, dict) else None
            if login is not None:
                logins.setdefault(_host(key), login)
        return logins
