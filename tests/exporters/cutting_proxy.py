"""An HTTP proxy in front of a Vault that cuts the raft snapshot's body off mid-stream.

Every other request is forwarded as it is. For GET /v1/sys/storage/raft/snapshot it sends the
real status and headers and only the first `keep` bytes of the body, then:
  mode "drop":  closes the connection while the announced Content-Length is not reached
                (the server died, the network broke);
  mode "clean": announces exactly `keep` bytes, so HTTP sees a complete, well-formed response
                (a buggy intermediary): only the snapshot's own checks can tell.
"""

from __future__ import annotations

import http.server
import threading
import urllib.error
import urllib.request

SNAPSHOT = "/v1/sys/storage/raft/snapshot"
_HOP = {"connection", "transfer-encoding", "content-length", "keep-alive"}


class CuttingProxy:
    def __init__(self, upstream: str, keep: int, mode: str = "drop"):
        self.upstream, self.keep, self.mode = upstream.rstrip("/"), keep, mode
        handler = type("Handler", (_Handler,), {"proxy": self})
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def address(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self) -> "CuttingProxy":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()


class _Handler(http.server.BaseHTTPRequestHandler):
    proxy: CuttingProxy
    protocol_version = "HTTP/1.1"

    def log_message(self, *args) -> None:
        pass

    def _forward(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else None
        request = urllib.request.Request(self.proxy.upstream + self.path, data=body, method=self.command,
                                         headers={k: v for k, v in self.headers.items() if k.lower() != "host"})
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        try:
            response = opener.open(request, timeout=30)
        except urllib.error.HTTPError as exc:
            response = exc
        data = response.read()
        cut = self.command == "GET" and self.path.startswith(SNAPSHOT) and response.status == 200
        sent = data[: self.proxy.keep] if cut else data
        self.send_response(response.status)
        for key, value in response.headers.items():
            if key.lower() not in _HOP:
                self.send_header(key, value)
        announced = len(data) if cut and self.proxy.mode == "drop" else len(sent)
        self.send_header("Content-Length", str(announced))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(sent)
        self.wfile.flush()
        self.close_connection = True

    do_GET = do_POST = do_PUT = do_DELETE = do_LIST = _forward
