"""A tiny scripted S3 stand-in over real HTTP, for the error paths moto cannot produce (5xx,
throttling, 501 on conditional writes, redirects, slow answers), and for seeing exactly what
a client sent (paths and headers)."""

from __future__ import annotations

import http.server
import ssl
import threading


class _QuietServer(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        pass  # a client that timed out and hung up is the point of some tests


class FakeS3:
    """A tiny scripted HTTP server for error paths moto cannot produce (5xx, throttling,
    501 on conditional writes, slow responses). respond(method, headers) -> (status, body)."""

    def __init__(self, respond, tls: tuple[str, str] | None = None):
        """tls: (certificate file, key file) to serve https."""
        self.requests: list[tuple[str, str]] = []
        self.headers: list[dict[str, str]] = []  # each request's, names lower-case
        self.peers: list[tuple[str, int]] = []  # each request's client address: one per connection
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # answers botocore's Expect: 100-continue at once
            def handle_any(self):
                length = int(self.headers.get("Content-Length") or 0)
                if length:
                    self.rfile.read(length)
                outer.requests.append((self.command, self.path))
                outer.headers.append({k.lower(): v for k, v in self.headers.items()})
                outer.peers.append(self.client_address)
                status, body = respond(self.command, self.headers)
                self.send_response(status)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(body)

            do_GET = do_PUT = do_HEAD = do_DELETE = handle_any

            def log_message(self, *args):
                pass

        self.server = _QuietServer(("127.0.0.1", 0), Handler)
        if tls:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(*tls)
            self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
        self.url = f"{'https' if tls else 'http'}://127.0.0.1:{self.server.server_port}"
        threading.Thread(target=self.server.serve_forever, args=(0.02,), daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def error_xml(code: str, extra: str = "") -> bytes:
    return f"<?xml version='1.0'?><Error><Code>{code}</Code><Message>m</Message>{extra}</Error>".encode()
