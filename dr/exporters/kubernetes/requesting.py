"""Requests to the API server through the dynamic client: retries, timeouts, plain JSON.

Every call goes through DynamicClient.request with serialize=False and the body is parsed
with json.loads: wrapping a 500-object page in ResourceInstance objects would cost more than
the request. Errors carry their retry intent in their type (kopf's habit):
  TemporaryFailure  429 and 5xx, and dropped connections (a dr.kits.retrying.Transient): retried
                    with dr's one policy, waiting what Retry-After asks, else backoff;
  RequestTimeout    no answer within the timeout: never retried, so a hanging list fails the
                    backup loudly, naming the resource, instead of silently losing objects;
  KubeError         anything else (403, 404, 409, 422 ...): permanent, for the caller to judge.
"""

from __future__ import annotations

import json
import re
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Iterator

import urllib3.exceptions

from dr.kits.retrying import Transient, policy, retry_after

MAX_RETRY_AFTER = 120.0
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
    try:
        status = json.loads(exc.body or "{}")
    except ValueError:
        status = {}
    message = status.get("message") or (exc.body or "")[:300] or str(exc.reason)
    cls = TemporaryFailure if exc.status in _TEMPORARY else KubeError
    return cls(exc.status, status.get("reason") or str(exc.reason), f"{what}: {exc.status} {message}",
               retry_after(exc.headers, MAX_RETRY_AFTER))


class Api:
    """JSON requests with retries, bound to one DynamicClient."""

    def __init__(self, dynamic, *, attempts: int = 6, timeout: float = 30.0,
                 log: Callable[[str], None] = lambda m: None, backoff_max: float = 30.0):
        self.dynamic = dynamic
        self.timeout = timeout
        self.log = log
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
        extra = {"content_type": content_type} if content_type else {}
        try:
            return self.call(lambda: self.dynamic.request(
                method, path, body=body, query_params=list(query), serialize=False,
                _request_timeout=(min(timeout, 10.0), timeout), **extra), what=what)
        except RequestTimeout:
            raise RequestTimeout(0, "Timeout", f"{what}: no answer within {timeout:g} s") from None

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
