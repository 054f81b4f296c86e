"""Requests to the API server on the kubernetes client's pool: retries, timeouts, plain JSON.

Every call is sent by Api._http on the client's own pool (its TLS, proxy and credentials; the
kubeconfig's token refresh is asked at most once a second, Api._auth) and the body is parsed
with json.loads: wrapping a 500-object page in ResourceInstance objects would cost more than
the request, and DynamicClient.request's walk over every body cost a third of the client's CPU
per create.
Discovery still goes through the DynamicClient (discovering.py).

Errors carry their retry intent in their type (kopf's habit):
  TemporaryFailure  429 and 5xx, and dropped connections (a dr.kits.retrying.Transient): retried
                    with dr's one policy, waiting what Retry-After asks, else backoff;
  RequestTimeout    no answer within the timeout: never retried, so a hanging list fails the
                    backup loudly, naming the resource, instead of silently losing objects;
  KubeError         anything else (403, 404, 409, 422 ...): permanent, for the caller to judge.
"""

from __future__ import annotations

import datetime
import json
import re
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Iterator

import urllib3.exceptions

from dr.kits.retrying import Transient, policy, retry_after

MAX_RETRY_AFTER = 120.0
# How long one answer of the client's credential hook serves further requests. The hook runs the
# kubeconfig loader's expiry check and copies its settings over the configuration on every call,
# ~9% of a create's client CPU; the client renews a token 5 minutes before it expires, so a
# second's reuse never sends an expired one.
CREDENTIALS_REUSE_SECONDS = 1.0
_TEMPORARY = {429, 500, 502, 503, 504}


class KubeError(Exception):
    """A request the API server refused; `status` is the HTTP code (0: no answer)."""

    def __init__(self, status: int, reason: str, message: str, retry_after: float | None = None):
        super().__init__(message)
        self.status, self.reason, self.retry_after = status, reason, retry_after


class TemporaryFailure(KubeError, Transient):
    pass


class RequestTimeout(KubeError):
    pass


def _translate(exc, what: str) -> KubeError:
    """A DynamicApiError as one of ours."""
    return refusal(exc.status, str(exc.reason), exc.body or "", exc.headers, what)


def refusal(status: int, reason: str, body: str, headers, what: str) -> KubeError:
    """An answer outside 2xx as one of ours: the Status object's message and reason when the
    body is one, and the wait Retry-After asks for."""
    try:
        answer = json.loads(body or "{}")
    except ValueError:
        answer = {}
    if not isinstance(answer, dict):
        answer = {}
    message = answer.get("message") or (body or "")[:300] or reason
    cls = TemporaryFailure if status in _TEMPORARY else KubeError
    return cls(status, answer.get("reason") or reason, f"{what}: {status} {message}",
               retry_after(headers, MAX_RETRY_AFTER))


class Api:
    """JSON requests with retries, bound to one DynamicClient."""

    def __init__(self, dynamic, *, attempts: int = 6, timeout: float = 30.0,
                 log: Callable[[str], None] = lambda m: None, backoff_max: float = 30.0):
        self.dynamic = dynamic
        self.timeout = timeout
        self.log = log
        self._credentials: tuple[float, dict, list] | None = None  # (when, headers, query) from the hook
        self._retrying = lambda: policy(attempts, 0.5, backoff_max, retry_on=TemporaryFailure,
                                        before_sleep=lambda s: log(f"retrying after {s.outcome.exception()}"))

    @property
    def server(self) -> str:
        """The API server's URL, as the kubeconfig names it (where the cluster's objects live)."""
        configuration = getattr(getattr(self.dynamic, "client", None), "configuration", None)
        return str(getattr(configuration, "host", "") or "")

    def call(self, fn: Callable[[], Any], *, what: str) -> Any:
        """Run one client call with the retry policy; its errors become the typed ones above."""
        for attempt in self._retrying():
            with attempt:
                return self._once(fn, what)
        raise AssertionError("unreachable")

    def request(self, method: str, path: str, *, what: str, body: Any = None,
                query: list[tuple[str, Any]] = (), timeout: float | None = None,
                content_type: str | None = None, parse: bool = True) -> Any:
        seconds = timeout or self.timeout
        response = self.send(method, path, what=what, body=body, query=query, timeout=seconds,
                             content_type=content_type)
        data = self.read(response, what=what, timeout=seconds)
        if not parse:
            return data
        return json.loads(data) if data else {}

    def send(self, method: str, path: str, *, what: str, body: Any = None, query: list[tuple[str, Any]] = (),
             timeout: float, content_type: str | None = None):
        """Send a request and wait for the answer's status and headers; the body is not read yet."""
        try:
            return self.call(lambda: self._http(method, path, body, query, timeout, content_type, what), what=what)
        except RequestTimeout:
            raise RequestTimeout(0, "Timeout", f"{what}: no answer within {timeout:g} s") from None

    def _http(self, method: str, path: str, body: Any, query, timeout: float, content_type: str | None,
              what: str):
        """One request on the client's own connection pool, with its headers and credentials.

        What DynamicClient.request does, less its per-request work that a plain JSON body does
        not need: the generated client walks every body to "sanitize" it and rebuilds the headers
        through three helpers, about a third of the client's CPU per create (py-spy, 10,000
        creates), and on a two-core recovery host that CPU is taken from the API server's."""
        client = self.dynamic.client
        headers = {**client.default_headers, "Accept": "application/json",
                   "Content-Type": content_type or "application/json"}
        if client.cookie:
            headers["Cookie"] = client.cookie
        auth_headers, auth_query = self._auth(client)
        headers.update(auth_headers)
        queries = [*query, *auth_query]
        url = client.configuration.host + path
        if queries:
            url += "?" + client.parameters_to_url_query(queries, {})
        payload = body if body is None or isinstance(body, (bytes, str)) else json.dumps(body, default=_plain)
        response = client.rest_client.pool_manager.request(
            method.upper(), url, body=payload, headers=headers, preload_content=False,
            timeout=urllib3.Timeout(connect=min(timeout, 10.0), read=timeout))
        if not 200 <= response.status <= 299:
            raise refusal(response.status, response.reason or "", response.data.decode("utf-8", "replace"),
                          response.headers, what)
        return response

    def _auth(self, client) -> tuple[dict, list]:
        """The credentials as the client would send them. The hook behind this is the kubeconfig's
        refresh (an exec plugin's or an expiring token is renewed there) or the in-cluster
        account's rotated token; its answer is reused for CREDENTIALS_REUSE_SECONDS. Threads
        may both ask at a boundary: each answer is whole, and the last one is kept."""
        now = time.monotonic()
        kept = self._credentials
        if kept is not None and now - kept[0] < CREDENTIALS_REUSE_SECONDS:
            return kept[1], kept[2]
        headers: dict = {}
        queries: list = []
        # path, method and body are for signing schemes; a bearer token does not read them
        client.update_params_for_auth(headers, queries, ["BearerToken"], "", "", None)
        self._credentials = (now, headers, queries)
        return headers, queries

    @staticmethod
    def read(response, *, what: str, timeout: float) -> bytes:
        """The body of a sent request (a stalled body is a timeout like a stalled answer)."""
        try:
            return response.data
        except (urllib3.exceptions.ReadTimeoutError, TimeoutError):
            raise RequestTimeout(0, "Timeout", f"{what}: no answer within {timeout:g} s") from None
        except urllib3.exceptions.ProtocolError as exc:
            raise KubeError(0, "ConnectionError", f"{what}: connection lost while reading: {exc}") from None

    @staticmethod
    def _once(fn: Callable[[], Any], what: str) -> Any:
        # imported here: loading the kubernetes package costs 0.2 s, which every command that only
        # reads this exporter's declarations (dr audit, dr plugins) would pay at import
        from kubernetes.dynamic.exceptions import DynamicApiError

        try:
            return fn()
        except DynamicApiError as exc:
            raise _translate(exc, what) from None
        except (urllib3.exceptions.ReadTimeoutError, urllib3.exceptions.ConnectTimeoutError, TimeoutError):
            raise RequestTimeout(0, "Timeout", f"{what}: no answer in time") from None
        except (urllib3.exceptions.ProtocolError, urllib3.exceptions.NewConnectionError) as exc:
            raise TemporaryFailure(0, "ConnectionError", f"{what}: {exc}") from None

    def get(self, path: str, *, what: str, query: list[tuple[str, Any]] = ()) -> dict | None:
        """The object at `path`, or None when it does not exist (404)."""
        try:
            return self.request("get", path, what=what, query=query)
        except KubeError as exc:
            if exc.status == 404:
                return None
            raise

    def pages(self, path: str, *, what: str, limit: int, timeout: float) -> Iterator[dict]:
        """Each page of a paginated list (limit/continue), as the server answers it.

        Pipelined: the request for page n+1 goes out, on a helper thread, as soon as page n's
        continue token is known -- read from the head of the body before the body is parsed
        (early_token) -- so the server renders page n+1 while this thread parses and the caller
        works on page n. The helper only sends and waits for the headers; bodies are read here,
        from a receive buffer sized to hold a page (connecting.py): a helper that needed the GIL
        more would wait for it while the caller computes. At most two pages are held at once.
        """
        def send(token: str | None):
            query = [("limit", limit)] + ([("continue", token)] if token else [])
            return self.send("get", path, what=what, query=query, timeout=timeout)
        ahead = ThreadPoolExecutor(1, thread_name_prefix="kube-page")
        try:
            future = ahead.submit(send, None)
            while future is not None:
                data = self.read(future.result(), what=what, timeout=timeout)
                early = early_token(data)
                future = ahead.submit(send, early) if early else None
                page = json.loads(data)
                token = (page.get("metadata") or {}).get("continue") or ""
                if early is None and token:
                    future = ahead.submit(send, token)
                elif early is not None and early != token:
                    raise KubeError(0, "BadList", f"{what}: continue token read early differs from the parsed one")
                yield page
        finally:
            ahead.shutdown(wait=False, cancel_futures=True)


def _plain(value: Any) -> str:
    """A YAML timestamp (PyYAML reads one as a date or datetime) as the string it was written as,
    as the generated client's sanitizing did."""
    if isinstance(value, (datetime.date, datetime.datetime)):
        return value.isoformat()
    raise TypeError(f"{type(value).__name__} is not JSON")


_CONTINUE = re.compile(rb'"continue"\s*:\s*"([^"\\]*)"')


def early_token(data: bytes) -> str | None:
    """The list's continue token ('' on the last page) when its metadata precedes its items
    (as a real API server writes it: TypeMeta, ListMeta, items); None when unsure."""
    items = data.find(b'"items"')
    head = data[:items] if items >= 0 else b""
    if b'"metadata"' not in head:
        return None
    if b'"continue"' not in head:
        return ""
    found = _CONTINUE.search(head)
    return found.group(1).decode() if found else None  # an escaped token: let the parser read it
