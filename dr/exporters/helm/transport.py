"""HTTP for chart repositories and OCI registries: one requests session, errors as ChartError.

Anonymous access only (public or in-cluster repositories); a registry's `Bearer realm=...`
challenge gets an anonymous token, as helm does for public registries. Loopback hosts are
reached without the environment's proxies.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

import requests

from dr.model.redaction import redact


class ChartError(Exception):
    """A chart could not be fetched or pushed; the message names the URL and the reason."""


class NotFound(ChartError):
    pass


class Transport:
    def __init__(self, timeout: float, verify_tls: bool = True) -> None:
        self.timeout = timeout
        self.session = requests.Session()
        self.session.verify = verify_tls
        self._tokens: dict[tuple[str, str], str] = {}

    def close(self) -> None:
        self.session.close()

    def request(self, method: str, url: str, *, scope: str = "", ok=(200,), **kwargs) -> requests.Response:
        """One request; 404 raises NotFound, another status outside `ok` ChartError."""
        host = urlsplit(url).hostname or ""
        self.session.trust_env = host not in ("127.0.0.1", "localhost", "::1")
        headers = dict(kwargs.pop("headers", None) or {})
        token = self._tokens.get((host, scope))
        if token:
            headers["Authorization"] = f"Bearer {token}"
        try:
            response = self.session.request(method, url, headers=headers, timeout=self.timeout, **kwargs)
            if response.status_code == 401 and not token and "bearer" in response.headers.get(
                    "WWW-Authenticate", "").lower():
                self._tokens[(host, scope)] = self._anonymous_token(response.headers["WWW-Authenticate"], scope)
                return self.request(method, url, scope=scope, ok=ok, headers=headers, **kwargs)
        except requests.RequestException as exc:
            raise ChartError(f"{redact(url)}: cannot connect ({exc.__class__.__name__})") from None
        if response.status_code == 404:
            raise NotFound(f"{redact(url)}: not found (HTTP 404)")
        if response.status_code not in ok:
            raise ChartError(f"{redact(url)}: HTTP {response.status_code} {response.reason or ''}".rstrip())
        return response

    def get(self, url: str, **kwargs) -> bytes:
        return self.request("GET", url, **kwargs).content

    def _anonymous_token(self, challenge: str, scope: str) -> str:
        params = dict(re.findall(r'(\w+)="([^"]*)"', challenge))
        query = {k: v for k, v in (("service", params.get("service")), ("scope", scope or params.get("scope")))
                 if v}
        try:
            answer = self.session.get(params.get("realm", ""), params=query, timeout=self.timeout)
        except requests.RequestException as exc:
            raise ChartError(f"token server {params.get('realm')}: cannot connect ({exc.__class__.__name__})") \
                from None
        if answer.status_code != 200:
            raise ChartError(f"token server {params.get('realm')}: HTTP {answer.status_code} (dr reads charts "
                             "anonymously: a registry that needs credentials is not supported yet)")
        body = answer.json()
        return body.get("token") or body.get("access_token") or ""
