"""The MLflow REST API as the exporter uses it: auth, errors with reasons, pagination.

Where it sits: below reading (export) and writing (restore). dr talks to MLflow over its
documented REST API (`/api/2.0/mlflow/...`) with `requests`, never through the `mlflow`
package: that package is hundreds of MB and pins half of the scientific stack, while the
registry and tracking endpoints dr needs are a few dozen JSON calls.

Auth follows MLflow's own conventions: MLFLOW_TRACKING_TOKEN (a bearer token) or
MLFLOW_TRACKING_USERNAME / MLFLOW_TRACKING_PASSWORD (basic). Credentials are read from the
environment when a client is built and never appear in a message, a record or a finding.
TLS too: MLFLOW_TRACKING_SERVER_CERT_PATH (a CA bundle), MLFLOW_TRACKING_CLIENT_CERT_PATH (a
client certificate with its key), MLFLOW_TRACKING_INSECURE_TLS=true (no verification), else the
generic CA settings (dr.kits.tls); proxies through HTTPS_PROXY/NO_PROXY, as MLflow's
own client (requests with its environment) reaches them.
"""

from __future__ import annotations

import os
import time
from typing import Any, Iterator

import requests
from requests.adapters import HTTPAdapter
from urllib3.util.retry import Retry

from dr.kits.tls import PinnedTLS, flag, verify_setting
from dr.model.redaction import redact

API = "/api/2.0/mlflow"
# What MLflow answers (HTTP 400 BAD_REQUEST, SQLAlchemy's message) when its database pool had no
# connection free for the request: it waited, then gave up before doing anything, so sending the
# request again is safe whatever it was, a model-versions/create included. A busy server (a
# restore's parallel writes, a loaded machine) answers it now and then.
POOL_EXHAUSTED = "QueuePool limit"
POOL_TRIES = 5  # backoff 0.5, 1, 2, 4 s between them


class MlflowError(Exception):
    """An MLflow request failed; `code` is MLflow's error_code (RESOURCE_DOES_NOT_EXIST ...)
    or the HTTP status as a string."""

    def __init__(self, message: str, code: str = "", status: int = 0) -> None:
        super().__init__(message)
        self.code, self.status = code, status

    @property
    def missing(self) -> bool:
        return self.code == "RESOURCE_DOES_NOT_EXIST" or self.status == 404


class MlflowUnreachable(MlflowError):
    """The server did not answer at all (refused, timed out, DNS)."""


class _Adapter(PinnedTLS, HTTPAdapter):
    """The pooled, retrying adapter, sending with MLflow's TLS settings."""


class Client:
    """One tracking server. Thread-safe for the calls below (a pooled requests.Session)."""

    def __init__(self, url: str, *, timeout: float = 30.0, pool: int = 8, retries: int = 3) -> None:
        self.url = url.rstrip("/")
        self.timeout = timeout
        self.session = requests.Session()
        # read=0: a request whose answer timed out may have been done by the server; sent again,
        # a model-versions/create would consume the next version number (and runs/create make a
        # second run). Refused connections and 429/502/503/504 answers are retried.
        retry = Retry(total=retries, read=0, backoff_factor=0.2, status_forcelist=(429, 502, 503, 504),
                      allowed_methods=None, raise_on_status=False)
        adapter = _Adapter(pool_connections=pool, pool_maxsize=pool, max_retries=retry)
        adapter.verify = verify_setting(None, ("MLFLOW_TRACKING_SERVER_CERT_PATH",),
                                        insecure=flag("MLFLOW_TRACKING_INSECURE_TLS"))
        adapter.cert = os.environ.get("MLFLOW_TRACKING_CLIENT_CERT_PATH") or None
        self.session.mount("http://", adapter)
        self.session.mount("https://", adapter)
        token = os.environ.get("MLFLOW_TRACKING_TOKEN")
        user = os.environ.get("MLFLOW_TRACKING_USERNAME")
        if token:
            self.session.headers["Authorization"] = f"Bearer {token}"
        elif user:
            self.session.auth = (user, os.environ.get("MLFLOW_TRACKING_PASSWORD", ""))
        self.requests = 0  # counted for tests and benchmarks (an unchanged export costs two lists)

    @property
    def where(self) -> str:
        return redact(self.url)

    def call(self, method: str, path: str, *, params: dict | None = None, body: dict | None = None,
             raw: bool = False) -> Any:
        """One request to `path` (under /api/2.0/mlflow unless it starts with /api)."""
        url = self.url + (path if path.startswith("/api") else API + path)
        attempt = 0
        while True:
            self.requests += 1
            try:
                answer = self.session.request(method, url, params=params, json=body, timeout=self.timeout,
                                              stream=raw)
            except requests.RequestException as exc:
                raise MlflowUnreachable(f"MLflow server {self.where} unreachable: {type(exc).__name__}: "
                                        f"{redact(str(exc))[:300]}") from None
            if answer.status_code < 400:
                return answer if raw else (answer.json() if answer.content else {})
            error = _error(self.where, method, path, answer)
            attempt += 1
            if POOL_EXHAUSTED not in str(error) or attempt >= POOL_TRIES:
                raise error
            time.sleep(0.5 * 2 ** (attempt - 1))

    def get(self, path: str, **params: Any) -> dict:
        return self.call("GET", path, params={k: v for k, v in params.items() if v is not None})

    def post(self, path: str, body: dict) -> dict:
        return self.call("POST", path, body=body)

    def patch(self, path: str, body: dict) -> dict:
        return self.call("PATCH", path, body=body)

    def delete(self, path: str, body: dict | None = None, params: dict | None = None) -> dict:
        return self.call("DELETE", path, body=body, params=params)

    def pages(self, path: str, key: str, **params: Any) -> Iterator[dict]:
        """Every item of a paginated GET search (next_page_token)."""
        token = None
        while True:
            page = self.get(path, page_token=token, **params)
            yield from page.get(key, [])
            token = page.get("next_page_token")
            if not token:
                return

    def alive(self) -> None:
        """Raise MlflowUnreachable / MlflowError unless the registry answers a search."""
        self.get("/registered-models/search", max_results=1)


def _error(where: str, method: str, path: str, answer: requests.Response) -> MlflowError:
    code, message = str(answer.status_code), answer.text[:300]
    try:
        data = answer.json()
        code, message = data.get("error_code", code), data.get("message", message)
    except ValueError:
        pass
    hint = ""
    if answer.status_code in (401, 403):
        hint = " (set MLFLOW_TRACKING_TOKEN, or MLFLOW_TRACKING_USERNAME and MLFLOW_TRACKING_PASSWORD)"
    return MlflowError(f"MLflow {where}: {method} {path}: HTTP {answer.status_code} {code}: "
                       f"{redact(message)}{hint}", code=code, status=answer.status_code)
