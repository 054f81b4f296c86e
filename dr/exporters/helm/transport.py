"""HTTP for chart repositories (index.yaml, .tgz, .prov): one requests session, errors as
ChartError, the helm exporter's error for any chart source. (OCI registries are reached through
the kit's registry client instead: dr.exporters.helm.oci.)

Authentication follows the server's challenge (HTTP 401 `WWW-Authenticate`), answered the way the
kit's registry client answers it (dr.kits.oci.challenges):
- `Bearer realm=...,service=...`: a token from the realm for the request's scope, asked with
  the host's login (basic auth) when `auth_file` has one, else anonymously; tokens are kept per
  host and scope.
- `Basic`: the host's login, sent with every later request to that host.
Logins come from the kit's resolver set up for chart repositories (dr.exporters.helm.logins:
`auth_file` alone). A host that needs a login it does not have, or refuses the one given, is a
ChartError saying so and naming the host and `auth_file`, never the credential. Loopback hosts are reached
without the environment's proxies. TLS: the source's `ca_file` (helm's `--ca-file`), else the
generic CA settings (dr.kits.tls); `tls_verify: false` wins over REQUESTS_CA_BUNDLE.
"""

from __future__ import annotations

from urllib.parse import urlsplit

import requests
import requests.adapters

from dr.exporters.helm.logins import refused, repository_logins
from dr.kits.oci.challenges import Challenge, TokenError, ask_token
from dr.kits.oci.credentials import Credentials
from dr.kits.tls import PinnedTLS, verify_setting
from dr.model.redaction import redact


class ChartError(Exception):
    """A chart could not be fetched or pushed; the message names the URL and the reason."""


class NotFound(ChartError):
    pass


class _Adapter(PinnedTLS, requests.adapters.HTTPAdapter):
    """Sends with the source's TLS choice, whatever requests merged from the environment."""


class Transport:
    def __init__(self, timeout: float, verify_tls: bool = True, credentials: Credentials | None = None,
                 ca_file: str | None = None) -> None:
        self.timeout = timeout
        self.session = requests.Session()
        adapter = _Adapter()
        adapter.verify = verify_setting(ca_file, insecure=not verify_tls)
        self.session.mount("https://", adapter)
        self.credentials = credentials or repository_logins(None)
        self._tokens: dict[tuple[str, str], str] = {}
        self._basic: set[str] = set()  # hosts that asked for basic auth

    def close(self) -> None:
        self.session.close()

    def request(self, method: str, url: str, *, scope: str = "", ok=(200,), **kwargs) -> requests.Response:
        """One request; 404 raises NotFound, another status outside `ok` ChartError."""
        parts = urlsplit(url)
        host = parts.netloc.rsplit("@", 1)[-1].lower()
        self.session.trust_env = parts.hostname not in ("127.0.0.1", "localhost", "::1")
        headers = dict(kwargs.pop("headers", None) or {})
        try:
            response = self._send(method, url, host, scope, headers, kwargs)
            if response.status_code == 401:
                response = self._answer_challenge(response, method, url, host, scope, headers, kwargs)
        except requests.RequestException as exc:
            raise ChartError(f"{redact(url)}: cannot connect ({exc.__class__.__name__})") from None
        if response.status_code == 404:
            raise NotFound(f"{redact(url)}: not found (HTTP 404)")
        if response.status_code not in ok:
            raise ChartError(f"{redact(url)}: HTTP {response.status_code} {response.reason or ''}".rstrip())
        return response

    def _send(self, method: str, url: str, host: str, scope: str, headers: dict, kwargs: dict) -> requests.Response:
        token = self._tokens.get((host, scope))
        auth = None
        if token:
            headers = {**headers, "Authorization": f"Bearer {token}"}
        elif host in self._basic:
            login = self._login(host)
            auth = (login.username, login.password) if login else None
        return self.session.request(method, url, headers=headers, auth=auth, timeout=self.timeout, **kwargs)

    def _answer_challenge(self, response: requests.Response, method: str, url: str, host: str, scope: str,
                          headers: dict, kwargs: dict) -> requests.Response:
        """Retry once with what the 401's challenge asks for; a second 401 is a refusal."""
        challenge = Challenge.parse(response.headers.get("WWW-Authenticate", ""))
        if challenge.scheme == "bearer":  # none yet, or expired: a new one
            self._tokens[(host, scope)] = self._token(challenge, scope, host)
        elif challenge.scheme == "basic" and host not in self._basic and self._login(host) is not None:
            self._basic.add(host)
        else:
            raise ChartError(f"{redact(url)}: {self._refused(host)}")
        again = self._send(method, url, host, scope, headers, kwargs)
        if again.status_code == 401:
            raise ChartError(f"{redact(url)}: {self._refused(host)}")
        return again

    def _login(self, host: str):
        try:
            return self.credentials.for_host(host)
        except ValueError as exc:  # the file cannot be read: its path and why, never its content
            raise ChartError(str(exc)) from None

    def _refused(self, host: str) -> str:
        self._login(host)  # a file that cannot be read says so first
        return refused(self.credentials, host)

    def get(self, url: str, **kwargs) -> bytes:
        return self.request("GET", url, **kwargs).content

    def _token(self, challenge: Challenge, scope: str, host: str) -> str:
        """A token from the challenge's realm (the kit's one way of asking), with the host's login
        when there is one."""
        try:
            return ask_token(self.session, challenge, [scope], self._login(host), self.timeout)
        except TokenError as exc:
            realm = redact(challenge.realm)
            if exc.refused:
                raise ChartError(f"token server {realm}: {self._refused(host)}") from None
            raise ChartError(f"token server {realm}: {exc.reason}") from None
