"""etcd's v3 gRPC API: status, members and the snapshot stream.

Where it sits: the exporter asks these for what it records (revision, version, members, the
change token) and for the snapshot's bytes. They speak gRPC, as `etcdctl` does, through
`grpcio` with etcd's method names and the few messages decoded by `protowire` (no generated
code: the Python etcd3 clients are unmaintained and pin protobuf 3). The JSON gateway
(`/v3/maintenance/snapshot`) was used before: etcd marshals every 32 KiB piece to base64 JSON
there, which made a snapshot through it about 3x slower than etcdctl's, before dr parsed a byte
(docs/benchmarks.md). TLS with a client certificate (a kubeadm control plane's etcd) is supported.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterator
from urllib.parse import urlsplit

import grpc

from dr.exporters.etcd.protowire import fields, first, text

STATUS = "/etcdserverpb.Maintenance/Status"
MEMBERS = "/etcdserverpb.Cluster/MemberList"
SNAPSHOT = "/etcdserverpb.Maintenance/Snapshot"
_OPTIONS = [("grpc.max_receive_message_length", 64 << 20), ("grpc.enable_http_proxy", 0)]
#: etcd answers pings more often than every 5 s (its --grpc-keepalive-min-time) with GOAWAY
KEEPALIVE_FLOOR = 10.0


class EtcdUnreachable(Exception):
    """No endpoint of the cluster answered; the message names each endpoint and why."""


class EtcdError(Exception):
    """The cluster answered with an error (a gRPC status other than unavailable)."""


@dataclass
class Tls:
    ca_file: str | None = None
    cert_file: str | None = None
    key_file: str | None = None

    def credentials(self) -> grpc.ChannelCredentials:
        def read(path: str | None) -> bytes | None:
            if not path:
                return None
            with open(path, "rb") as handle:
                return handle.read()
        return grpc.ssl_channel_credentials(read(self.ca_file), read(self.key_file), read(self.cert_file))


def _channel(endpoint: str, tls: Tls, timeout: float) -> grpc.Channel:
    """`http://host:port` is plain gRPC, `https://host:port` gRPC over TLS (etcd's client URLs).
    The snapshot stream has no deadline (it lasts as long as the database is large): keepalive
    pings unanswered for `timeout` seconds end it instead, so a dead member cannot hang a backup."""
    url = urlsplit(endpoint)  # options.py checked the scheme
    options = _OPTIONS + [("grpc.keepalive_time_ms", int(max(timeout, KEEPALIVE_FLOOR) * 1000)),
                          ("grpc.keepalive_timeout_ms", int(timeout * 1000))]
    if url.scheme == "https":
        return grpc.secure_channel(url.netloc, tls.credentials(), options=options)
    return grpc.insecure_channel(url.netloc, options=options)


def _why(exc: grpc.RpcError) -> str:
    return f"{exc.code().name}: {exc.details()}"  # type: ignore[attr-defined]


class Client:
    """One etcd cluster, through the first of its client URLs that answers."""

    def __init__(self, endpoints: list[str], tls: Tls, timeout: float) -> None:
        self.endpoints = [e.rstrip("/") for e in endpoints]
        self.tls = tls
        self.timeout = timeout
        self.endpoint = ""
        self._open: grpc.Channel | None = None

    def _call(self, method: str) -> dict[int, list]:
        """One unary call with an empty request; its answer's fields."""
        reasons = []
        for endpoint in ([self.endpoint] if self.endpoint else self.endpoints):
            channel = self._open if self._open is not None else _channel(endpoint, self.tls, self.timeout)
            try:
                answer = channel.unary_unary(method, request_serializer=bytes,
                                             response_deserializer=fields)(b"", timeout=self.timeout)
            except grpc.RpcError as exc:
                if exc.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED):  # type: ignore[attr-defined]
                    channel.close()
                    reasons.append(f"{endpoint}: {_why(exc)}")
                    continue
                raise EtcdError(f"{endpoint}{method}: {_why(exc)}") from None
            self.endpoint, self._open = endpoint, channel  # status, members and snapshot all from one member
            return answer
        raise EtcdUnreachable("no etcd endpoint answered: " + "; ".join(reasons))

    def status(self) -> dict[str, Any]:
        """The member's status, in the shape (and names) of etcd's JSON API."""
        found = self._call(STATUS)
        header = fields(first(found, 1, b""))
        return {"header": {"cluster_id": str(first(header, 1)), "member_id": str(first(header, 2)),
                           "revision": str(first(header, 3))},
                "version": text(found, 2), "dbSize": str(first(found, 3)), "raftIndex": str(first(found, 5))}

    def members(self) -> list[dict[str, Any]]:
        """Each member's name, id and URLs: what `--initial-cluster` is rebuilt from."""
        found = self._call(MEMBERS)
        members = [fields(member) for member in found.get(2, [])]
        return [{"id": str(first(m, 1)), "name": text(m, 2), "peer_urls": [bytes(u).decode() for u in m.get(3, [])],
                 "client_urls": [bytes(u).decode() for u in m.get(4, [])]} for m in members]

    def snapshot(self) -> tuple[Iterator[memoryview], Callable[[], None]]:
        """(the snapshot's pieces, a function that ends the stream and closes the connection)."""
        if self._open is None:
            self._call(STATUS)  # picks the member that answers
        channel = self._open
        stream = channel.unary_stream(SNAPSHOT, request_serializer=bytes, response_deserializer=_blob)(b"")

        def close() -> None:
            stream.cancel()
            channel.close()
            self._open = None
        return _pieces(stream, self.endpoint), close


def _blob(message: bytes) -> memoryview:
    """SnapshotResponse: header 1, remaining_bytes 2, blob 3; only the blob is kept (no copy)."""
    return first(fields(message), 3, memoryview(b""))


def _pieces(stream, endpoint: str) -> Iterator[memoryview]:
    try:
        yield from stream
    except grpc.RpcError as exc:
        if exc.code() == grpc.StatusCode.CANCELLED:  # type: ignore[attr-defined]
            return  # closed by us
        raise EtcdError(f"{endpoint}{SNAPSHOT}: the stream broke: {_why(exc)}") from None
