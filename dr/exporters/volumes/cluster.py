"""Requests to the API server: JSON objects, and streams to and from a pod through its proxy.

The pod proxy (`/api/v1/namespaces/NS/pods/NAME:PORT/proxy/PATH`, RBAC `pods/proxy`) is how dr
reaches the mover wherever dr runs: in the cluster's CronJob or on a laptop, the API server is
the one address it already has. Bodies stream both ways (never held whole). Transient failures
(429, 5xx, a dropped connection) of object requests are retried with dr's policy; a stream is
not retried here: its caller knows what was already moved.
"""

from __future__ import annotations

import json
from typing import Any, Iterable, Iterator
from urllib.parse import quote, urlencode

from dr.kits.kubeconfigs import KubeconfigError, load_into, resolve
from dr.kits.retrying import Transient, policy

TEMPORARY = {429, 500, 502, 503, 504}


class ClusterError(Exception):
    """A request the API server refused or could not answer; status 0: no answer."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


class TemporaryClusterError(ClusterError, Transient):
    pass


class Cluster:
    """One cluster, from a kubeconfig and context (kubectl's rules), or the in-cluster account."""

    def __init__(self, kubeconfig: str | None, context: str | None, *, timeout: float = 30.0):
        import kubernetes.client  # costs 0.2 s: only when a cluster is read

        configuration = kubernetes.client.Configuration()
        try:
            load_into(configuration, resolve(kubeconfig, context))
        except KubeconfigError as exc:
            raise ClusterError(0, str(exc)) from None
        configuration.retries = False
        self.server = configuration.host.rstrip("/")
        self._configuration = configuration
        self._pool = kubernetes.client.ApiClient(configuration).rest_client.pool_manager
        self.timeout = timeout

    def _headers(self, content_type: str | None = "application/json") -> dict[str, str]:
        headers = {"Accept": "application/json"}
        if content_type:
            headers["Content-Type"] = content_type
        for setting in self._configuration.auth_settings().values():
            if setting.get("in") == "header" and setting.get("value"):
                headers[setting["key"]] = setting["value"]
        return headers

    def _send(self, method: str, path: str, body: Any = None, *, query: dict | None = None,
              content_type: str | None = "application/json", stream: bool = False, timeout: float | None = None,
              headers: dict | None = None):
        import urllib3

        url = self.server + path + (("?" + urlencode(query)) if query else "")
        data = json.dumps(body).encode() if isinstance(body, (dict, list)) else body
        try:
            return self._pool.request(method, url, body=data, headers={**self._headers(content_type), **(headers or {})},
                                      preload_content=not stream, timeout=urllib3.Timeout(
                                          connect=self.timeout, read=timeout or self.timeout),
                                      chunked=not isinstance(data, (bytes, type(None))), retries=False)
        except urllib3.exceptions.HTTPError as exc:
            raise TemporaryClusterError(0, f"{method} {path}: no answer: {exc}") from None

    def exec(self, namespace: str, pod: str, container: str | None, argv: list[str],
             timeout: float) -> tuple[int, str, str]:
        """Run argv in the pod's container (pods/exec, a websocket); (exit code, stdout, stderr).
        TimeoutError past `timeout` (the command goes on in the container); ClusterError when the
        API server refuses (no such pod or container, not running, forbidden)."""
        import time

        import kubernetes.client
        import kubernetes.stream

        api = kubernetes.client.CoreV1Api(kubernetes.client.ApiClient(self._configuration))
        extra = {"container": container} if container else {}
        try:
            ws = kubernetes.stream.stream(api.connect_get_namespaced_pod_exec, pod, namespace, command=argv,
                                          stderr=True, stdin=False, stdout=True, tty=False, _preload_content=False,
                                          **extra)
        except kubernetes.client.ApiException as exc:
            raise _error("exec", f"pods/{pod}", exc.status or 0, (exc.body or "").encode()) from None
        except Exception as exc:  # the websocket could not be opened
            raise ClusterError(0, f"exec in pod {namespace}/{pod}: {exc}") from None
        out, err = [], []
        deadline = time.monotonic() + timeout
        try:
            while ws.is_open():
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"exec in pod {namespace}/{pod}")
                ws.update(timeout=min(left, 1.0))
                out.append(ws.read_stdout(timeout=0) if ws.peek_stdout() else "")
                err.append(ws.read_stderr(timeout=0) if ws.peek_stderr() else "")
            out.append(ws.read_stdout(timeout=0) if ws.peek_stdout() else "")
            err.append(ws.read_stderr(timeout=0) if ws.peek_stderr() else "")
            try:
                code = ws.returncode
            except (TypeError, KeyError, IndexError, ValueError):  # no exit status came (the server went away)
                code = None
        finally:
            ws.close()
        return (code if code is not None else -1), "".join(out), "".join(err)

    def request(self, method: str, path: str, body: Any = None, *, query: dict | None = None,
                content_type: str = "application/json", missing_ok: bool = False) -> dict | None:
        """One JSON request, retried while the failure is transient; None for a 404 when missing_ok."""
        def attempt():
            response = self._send(method, path, body, query=query, content_type=content_type)
            if response.status == 404 and missing_ok:
                return None
            if response.status >= 400:
                raise _error(method, path, response.status, response.data)
            return json.loads(response.data or b"{}")
        return policy(6, 0.5, 10.0, retry_on=TemporaryClusterError)(attempt)

    def get(self, path: str, **query) -> dict | None:
        return self.request("GET", path, query=query or None, missing_ok=True)

    def items(self, path: str, **query) -> Iterator[dict]:
        """Every item of a list, page by page."""
        query = {"limit": 500, **query}
        while True:
            page = self.request("GET", path, query=query) or {}
            yield from page.get("items") or []
            token = (page.get("metadata") or {}).get("continue")
            if not token:
                return
            query["continue"] = token

    def create(self, path: str, body: dict) -> dict:
        return self.request("POST", path, body)

    def delete(self, path: str) -> None:
        self.request("DELETE", path, {"propagationPolicy": "Background"}, missing_ok=True)

    def proxy(self, namespace: str, pod: str, port: int, method: str, path: str, *, body=None,
              headers: dict | None = None, timeout: float | None = None):
        """A streaming request to the pod (urllib3 response, not read); raises on a refusal."""
        where = f"/api/v1/namespaces/{quote(namespace)}/pods/{quote(pod)}:{port}/proxy{path}"
        response = self._send(method, where, body, content_type="application/octet-stream", stream=True,
                              timeout=timeout, headers=headers)
        if response.status >= 400:
            data = response.read(64 << 10)
            response.release_conn()
            raise _error(method, f"pod {namespace}/{pod} {path}", response.status, data)
        return response


def _error(method: str, path: str, status: int, data: bytes) -> ClusterError:
    try:
        message = json.loads(data or b"{}").get("message") or json.loads(data or b"{}").get("error")
    except (ValueError, AttributeError):
        message = None
    message = message or (data or b"")[:300].decode("utf-8", "replace")
    cls = TemporaryClusterError if status in TEMPORARY else ClusterError
    return cls(status, f"{method} {path}: {status} {message}")


def lines(response) -> Iterable[bytes]:
    """A streamed response's lines (the mover's JSON lines)."""
    buffer = b""
    for data in response.stream(1 << 16):
        buffer += data
        *whole, buffer = buffer.split(b"\n")
        yield from whole
    if buffer:
        yield buffer
