"""etcd's v3 API through its JSON gateway: status, members and the snapshot stream.

Where it sits: the exporter asks these for what it records (revision, version, members, the
change token) and for the snapshot's bytes. Every etcd since 3.4 serves the gateway on its
client URLs (`/v3/...`, JSON bodies, 64-bit numbers as strings), so the HTTP client the rest of
dr already has (urllib3) is enough: no gRPC stack. The Python etcd3 gRPC clients are
unmaintained (the last `etcd3` release is from 2020 and its generated code needs protobuf 3).
`POST /v3/maintenance/snapshot` answers newline-delimited JSON, one `{"result": {"blob":
base64}}` per piece; decoded and joined they are byte-identical to `etcdctl snapshot save`.
TLS with a client certificate (a kubeadm control plane's etcd) is supported.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from typing import Any, Iterator

import urllib3


class EtcdUnreachable(Exception):
    """No endpoint of the cluster answered; the message names each endpoint and why."""


class EtcdError(Exception):
    """The cluster answered with an error (in the gateway's JSON error form)."""


@dataclass
class Tls:
    ca_file: str | None = None
    cert_file: str | None = None
    key_file: str | None = None


class Gateway:
    """One etcd cluster, through the first of its client URLs that answers."""

    def __init__(self, endpoints: list[str], tls: Tls, timeout: float) -> None:
        self.endpoints = [e.rstrip("/") for e in endpoints]
        self.timeout = timeout
        self._http = urllib3.PoolManager(ca_certs=tls.ca_file, cert_file=tls.cert_file, key_file=tls.key_file,
                                         retries=False)
        self.endpoint = ""

    def _post(self, path: str, body: dict, stream: bool = False) -> urllib3.BaseHTTPResponse:
        reasons = []
        for endpoint in ([self.endpoint] if self.endpoint else self.endpoints):
            try:
                response = self._http.request("POST", endpoint + path, body=json.dumps(body).encode(),
                                              headers={"Content-Type": "application/json"},
                                              timeout=urllib3.Timeout(connect=self.timeout, read=self.timeout),
                                              preload_content=not stream)
            except urllib3.exceptions.HTTPError as exc:
                reasons.append(f"{endpoint}: {type(exc).__name__}: {exc}")
                continue
            self.endpoint = endpoint  # status, members and snapshot all from one member
            if response.status != 200:
                detail = response.data[:300].decode(errors="replace") if not stream else response.read(300).decode(
                    errors="replace")
                raise EtcdError(f"{endpoint}{path}: HTTP {response.status}: {detail}")
            return response
        raise EtcdUnreachable("no etcd endpoint answered: " + "; ".join(reasons))

    def call(self, path: str, body: dict | None = None) -> dict[str, Any]:
        answer = json.loads(self._post(path, body or {}).data)
        if "error" in answer:
            raise EtcdError(f"{self.endpoint}{path}: {answer['error'].get('message', answer['error'])}")
        return answer

    def status(self) -> dict[str, Any]:
        return self.call("/v3/maintenance/status")

    def members(self) -> list[dict[str, Any]]:
        """Each member's name, id and URLs: what `--initial-cluster` is rebuilt from."""
        return [{"id": m.get("ID", ""), "name": m.get("name", ""), "peer_urls": m.get("peerURLs", []),
                 "client_urls": m.get("clientURLs", [])}
                for m in self.call("/v3/cluster/member/list").get("members", [])]

    def snapshot(self) -> tuple[Iterator[bytes], Any]:
        """(the snapshot's decoded pieces, a function that closes the connection)."""
        response = self._post("/v3/maintenance/snapshot", {}, stream=True)
        return _pieces(response), response.close  # a half-read stream cannot go back to the pool


def _pieces(response) -> Iterator[bytes]:
    pending = b""
    for data in response.stream(1 << 20):
        pending += data
        *lines, pending = pending.split(b"\n")
        for line in lines:
            if line.strip():
                yield _blob(line.strip())
    if pending.strip():
        yield _blob(pending.strip())


_BLOB = b'{"result":{"blob":"'


def _blob(line: bytes) -> bytes:
    """One piece. The gateway writes `{"result":{"blob":"BASE64"}}`; base64 has no quote, so the
    blob is sliced out and decoded from bytes (parsing 44 KB of JSON into a str, then encoding
    it back, doubled the cost). Any other line is parsed as JSON: an error, or another layout."""
    if line.startswith(_BLOB) and line.endswith(b'"}}'):
        return base64.b64decode(line[len(_BLOB):-3])
    message = json.loads(line)
    if "error" in message:  # the server gave up mid-stream
        raise EtcdError(f"snapshot stream: {message['error'].get('message', message['error'])}")
    return base64.b64decode(message.get("result", {}).get("blob", ""))
