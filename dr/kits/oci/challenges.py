"""HTTP auth challenges as registries and chart repositories send them, answered one way.

A server that wants a login answers 401 with `WWW-Authenticate`:
- `Bearer realm="...",service="...",scope="..."` (the distribution token protocol, also used by
  Harbor, Artifactory and ChartMuseum behind a registry's auth): ask the realm for a token for
  the request's scope, with the host's credential as basic auth (or, for an identity token, as
  an OAuth refresh-token grant), anonymously when there is none;
- `Basic realm="..."`: send the host's credential with every later request.
The registry client (client.py) and the helm exporter's chart-repository transport both answer
through this module, so a token server is asked the same way whoever asks; each maps the
errors below to its own (a retried TemporaryError, a ChartError) and words the refusal.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import requests

from dr.kits.oci.credentials import Credential
from dr.kits.retrying import retry_after

TEMPORARY_STATUS = frozenset({408, 429, 500, 502, 503, 504})
_PARAM = re.compile(r'(\w+)="([^"]*)"')


@dataclass(frozen=True)
class Challenge:
    scheme: str  # lower-case: "bearer", "basic", or whatever else the server named
    params: dict

    @classmethod
    def parse(cls, header: str) -> "Challenge":
        return cls(header.split(" ", 1)[0].lower(), dict(_PARAM.findall(header)))

    @property
    def realm(self) -> str:
        return self.params.get("realm", "")


class TokenError(Exception):
    """The token server did not give a token. `temporary`: asking again may (a connection
    failure, 5xx, 429); `status`: its HTTP status, None when it was not reached or not JSON."""

    def __init__(self, realm: str, reason: str, *, status: int | None = None, temporary: bool = False,
                 retry_after: float | None = None) -> None:
        super().__init__(f"token server {realm}: {reason}")
        self.reason, self.status, self.temporary, self.retry_after = reason, status, temporary, retry_after

    @property
    def refused(self) -> bool:
        return self.status in (401, 403)


def ask_token(session: requests.Session, challenge: Challenge, scopes: list[str],
              credential: Credential | None, timeout: float) -> str:
    """A token from the challenge's realm for `scopes` (none: the challenge's own scope, if any).
    Messages name the realm, never the credential."""
    query: dict = {"service": challenge.params.get("service", "")}
    scopes = [s for s in scopes if s] or [s for s in [challenge.params.get("scope", "")] if s]
    if scopes:
        query["scope"] = scopes
    auth = None
    if credential and credential.identity_token:
        query.update(grant_type="refresh_token", refresh_token=credential.password)
    elif credential:
        auth = (credential.username, credential.password)
    realm = challenge.realm
    try:
        answer = session.get(realm, params=query, auth=auth, timeout=timeout)
    except (requests.ConnectionError, requests.Timeout) as exc:
        raise TokenError(realm, f"connection failed ({exc.__class__.__name__})",
                         temporary=True) from None
    status = answer.status_code
    if status != 200:
        raise TokenError(realm, f"HTTP {status}", status=status,
                         temporary=status in TEMPORARY_STATUS, retry_after=retry_after(answer.headers))
    try:
        body = answer.json()
    except ValueError:
        raise TokenError(realm, "the answer is not JSON") from None
    if not isinstance(body, dict):
        raise TokenError(realm, "the answer is not a JSON object")
    return str(body.get("token") or body.get("access_token") or "")
