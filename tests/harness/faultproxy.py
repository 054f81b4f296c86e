"""A fault-injecting HTTP proxy: a real TCP server in front of a moto (or MLflow) server.

Every request dr sends goes through a real socket to this proxy, which forwards it to the
upstream server and relays the answer, except that, at `rate` (a seeded RNG decides), it
injects one of the faults a real object store and network produce:

- "slowdown":        503 SlowDown with S3's own XML error body, the request not forwarded;
- "reset_request":   part of the request body is read, then the connection is reset (RST),
                     the request not forwarded (a request body cut on the way);
- "reset_response":  the request IS forwarded and done upstream, then the status, headers
                     and part of the answer's body are sent and the connection is reset (an
                     answer without a body is not sent at all): the answer is lost after the
                     work was done (the hardest case for a
                     retry: a put done, its answer lost; an error body cut half-way);
- "slow":            the answer is held back, then trickled out in pieces;
- "pool_exhausted":  MLflow's answer when its database pool had no connection free (HTTP 400
                     BAD_REQUEST with SQLAlchemy's QueuePool message, MLflow's JSON body), the
                     request not forwarded. Not in the default set (an MLflow fault, not S3's).

Requests of one connection are sequential (HTTP/1.1 keep-alive); connections are served by
threads. The RNG is shared under a lock, so the sequence of decisions is fixed by the seed,
though which request meets which decision depends on the order threads reach it.
`counts` says how many requests were seen and how many faults of each kind were injected;
set `journal` to a list to have every request recorded in it as (method, path, fault or '').
`only(method, path)` limits the faults to the requests it accepts, `max_faults` their number
(one lost answer of one chosen request, then a clean line).
"""

from __future__ import annotations

import http.client
import json
import random
import socket
import struct
import threading
import time
import uuid
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable

FAULTS = ("slowdown", "reset_request", "reset_response", "slow")
KNOWN = FAULTS + ("pool_exhausted",)
_HOP = {"connection", "keep-alive", "transfer-encoding", "expect", "proxy-connection", "te", "upgrade",
        "content-length"}
SLOWDOWN_BODY = (
    '<?xml version="1.0" encoding="UTF-8"?>\n'
    "<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message>"
    "<RequestId>{id}</RequestId><HostId>{host}</HostId></Error>"
)


# as an MLflow 3 server with SQLAlchemy's default pool words it (seen in a restore at load 20)
POOL_EXHAUSTED_MESSAGE = ("QueuePool limit of size 5 overflow 10 reached, connection timed out, timeout 30.00 "
                          "(Background on this error at: https://sqlalche.me/e/21/3o7r)")


class _Reset(Exception):
    """The connection was reset on purpose: no more requests on it."""


class FaultProxy:
    """`FaultProxy(upstream_url, rate=0.1, seed=1)`; `.url` is what dr is given instead."""

    def __init__(self, upstream: str, rate: float = 0.1, seed: int = 0, faults: tuple[str, ...] = FAULTS,
                 slow_seconds: float = 0.3, only: Callable[[str, str], bool] | None = None,
                 max_faults: int | None = None) -> None:
        host, _, port = upstream.removeprefix("http://").rstrip("/").partition(":")
        self.upstream = (host, int(port or 80))
        self.rate, self.faults, self.slow_seconds = rate, tuple(faults), slow_seconds
        self.only, self.max_faults = only, max_faults
        unknown = set(self.faults) - set(KNOWN)
        if unknown:
            raise ValueError(f"unknown faults {sorted(unknown)}; known: {KNOWN}")
        self.counts: Counter = Counter()
        self.journal: list[tuple[str, str, str]] | None = None
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        self.server = _Server(("127.0.0.1", 0), type("Handler", (_Handler,), {"proxy": self}))
        self.server.counts = self.counts
        self._thread = threading.Thread(target=self.server.serve_forever, name="fault-proxy", daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    @property
    def injected(self) -> int:
        return sum(self.counts[f] for f in KNOWN)

    def start(self) -> "FaultProxy":
        self._thread.start()
        return self

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def __enter__(self) -> "FaultProxy":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.close()

    def decide(self, method: str = "", path: str = "") -> tuple[str, float]:
        """(fault or '', a number in [0, 1) for the fault's own choices), from the seeded RNG."""
        with self._lock:
            self.counts["requests"] += 1
            hit = self.rate > 0 and self._rng.random() < self.rate
            hit = hit and (self.only is None or self.only(method, path))
            hit = hit and (self.max_faults is None or self.injected < self.max_faults)
            fault = self._rng.choice(self.faults) if hit and self.faults else ""
            if fault:
                self.counts[fault] += 1
            return fault, self._rng.random()


class _Server(ThreadingHTTPServer):
    """Counts its own failures (a client that hung up first) instead of printing tracebacks
    into the stderr that the tests inspect."""

    daemon_threads = True
    counts: Counter

    def handle_error(self, request, client_address) -> None:
        self.counts["proxy_errors"] += 1


class _Handler(BaseHTTPRequestHandler):
    proxy: FaultProxy
    protocol_version = "HTTP/1.1"  # keep-alive, and "100 Continue" for botocore's Expect header

    def log_message(self, *args) -> None:
        pass

    def _any(self) -> None:
        fault, share = self.proxy.decide(self.command, self.path)
        if self.proxy.journal is not None:
            self.proxy.journal.append((self.command, self.path, fault))
        try:
            if fault == "reset_request":
                self._read_body(limit=int(self._length() * share))
                raise _Reset
            body = self._read_body()
            if fault == "slowdown":
                return self._slowdown()
            if fault == "pool_exhausted":
                return self._pool_exhausted()
            status, reason, headers, data = self._forward(body)
            if fault == "reset_response":
                if data:  # else (HEAD, an empty 200) the whole answer is lost: nothing is sent
                    self._send(status, reason, headers, data[: int(len(data) * share)], announced=len(data))
                raise _Reset
            self._send(status, reason, headers, data, announced=len(data),
                       delay=self.proxy.slow_seconds * (0.5 + share) if fault == "slow" else 0.0)
        except _Reset:
            self._reset()

    do_GET = do_HEAD = do_PUT = do_POST = do_DELETE = _any

    # -- reading the request ----------------------------------------------------------------
    def _length(self) -> int:
        return int(self.headers.get("Content-Length") or 0)

    def _read_body(self, limit: int | None = None) -> bytes:
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            return self._read_chunked(limit)
        length = self._length() if limit is None else min(limit, self._length())
        return self.rfile.read(length) if length else b""

    def _read_chunked(self, limit: int | None) -> bytes:
        out = bytearray()
        while limit is None or len(out) < limit:
            size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
            if size == 0:
                while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                    pass  # trailers
                break
            out += self.rfile.read(size)
            self.rfile.readline()
        return bytes(out)

    # -- answering --------------------------------------------------------------------------
    def _forward(self, body: bytes) -> tuple[int, str, list[tuple[str, str]], bytes]:
        conn = http.client.HTTPConnection(*self.proxy.upstream, timeout=120)
        try:
            conn.putrequest(self.command, self.path, skip_host=True, skip_accept_encoding=True)
            for key, value in self.headers.items():
                if key.lower() not in _HOP:
                    conn.putheader(key, value)
            conn.putheader("Content-Length", str(len(body)))
            conn.endheaders(body or None)
            answer = conn.getresponse()
            data = answer.read() if self.command != "HEAD" else b""
            headers = [(k, v) for k, v in answer.getheaders() if k.lower() not in _HOP]
            if self.command == "HEAD":
                headers.append(("Content-Length", answer.getheader("Content-Length", "0")))
            return answer.status, answer.reason, headers, data
        finally:
            conn.close()

    def _slowdown(self) -> None:
        body = SLOWDOWN_BODY.format(id=uuid.uuid4().hex[:16].upper(), host=uuid.uuid4().hex).encode()
        self._send(503, "Slow Down", [("Content-Type", "application/xml")], body, announced=len(body))

    def _pool_exhausted(self) -> None:
        body = json.dumps({"error_code": "BAD_REQUEST", "message": POOL_EXHAUSTED_MESSAGE}).encode()
        self._send(400, "Bad Request", [("Content-Type", "application/json")], body, announced=len(body))

    def _send(self, status: int, reason: str, headers: list[tuple[str, str]], data: bytes, announced: int,
              delay: float = 0.0) -> None:
        if delay:
            time.sleep(delay / 2)
        self.send_response_only(status, reason)
        for key, value in headers:
            self.send_header(key, value)
        if self.command != "HEAD":
            self.send_header("Content-Length", str(announced))
        self.end_headers()
        if self.command == "HEAD" or not data:
            return
        pieces = 4 if delay else 1
        step = -(-len(data) // pieces)
        for start in range(0, len(data), step):
            if delay and start:
                time.sleep(delay / 2 / pieces)
            self.wfile.write(data[start:start + step])

    def _reset(self) -> None:
        """Close with SO_LINGER 0: the peer gets a TCP RST, as from a dead middlebox."""
        self.close_connection = True
        try:
            self.wfile.flush()
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.connection.close()
        except OSError:
            pass
