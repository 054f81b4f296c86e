"""One AXFR, streamed into a compact zone: rows of (name, type, ttl, [rdata text]).

Why not octoDNS's AxfrSource here: it builds the zone twice over (dnspython's `Zone`, then an
octoDNS record with its validation per name and type), which measured ~25 s of CPU for 50,000
records where `dig AXFR` takes 0.4 s. The transfer's messages are read as they arrive and only
grouped by name and type; octoDNS records are built later, and only where a provider needs them
(a restore into Route53). The rdata stays in presentation form, with absolute names: what `dig`
prints and what octoDNS's `Rrset` carries.

Which reader: an unsigned transfer is read by wire.py (dr's own: ~6 s of dnspython objects per
50,000 records saved); a TSIG-signed one by dnspython, which verifies the signature over every
message of the transfer. Both give the same rows (a test compares them on a bind9 zone).
"""

from __future__ import annotations

from dataclasses import dataclass, field
import socket
import time
from typing import Any, Iterator

import dns.exception
import dns.message
import dns.name
import dns.query
import dns.rdatatype

from dr.exporters.dns import wire

SOA = dns.rdatatype.SOA


class TransferCut(dns.exception.DNSException):
    """The server closed the connection before the transfer's closing SOA."""


@dataclass
class Server:
    """An authoritative server and the TSIG key dr signs with there (keyring None: unsigned)."""
    host: str
    port: int
    timeout: float
    keyring: Any = None
    keyname: str | None = None
    algorithm: str = "hmac-sha256"

    def auth(self) -> dict[str, Any]:
        return {"keyring": self.keyring, "keyname": self.keyname, "keyalgorithm": self.algorithm} \
            if self.keyring else {}

    def label(self) -> str:
        return f"{self.host}:{self.port}"


@dataclass
class Transferred:
    """A zone as one AXFR carried it. rows: {(owner fqdn lower-cased, TYPE): [ttl, [rdata text]]}."""
    zone: str
    serial: int | None = None
    rows: dict[tuple[str, str], list] = field(default_factory=dict)

    def relative(self, fqdn: str) -> str:
        """The owner name relative to the zone ("" for its apex), as octoDNS names records."""
        return "" if fqdn == self.zone else fqdn[: -len(self.zone) - 1]


def axfr(server: Server, zone: str) -> Transferred:
    """Every record of `zone` but its SOA (whose serial is kept), in one streamed transfer: dr's own
    wire reader, or dnspython's when the transfer is signed (it verifies TSIG over every message)."""
    return axfr_dnspython(server, zone) if server.keyring else axfr_wire(server, zone)


def axfr_dnspython(server: Server, zone: str) -> Transferred:
    out = Transferred(zone.lower())
    rows = out.rows
    for message in dns.query.xfr(server.host, zone, port=server.port, timeout=server.timeout,
                                 lifetime=server.timeout, relativize=False, **server.auth()):
        for rrset in message.answer:
            if rrset.rdtype == SOA:
                out.serial = rrset[0].serial if out.serial is None else out.serial
                continue
            key = (rrset.name.to_text().lower(), dns.rdatatype.to_text(rrset.rdtype))
            texts = [rd.to_text() for rd in rrset]
            row = rows.get(key)
            if row is None:
                rows[key] = [rrset.ttl, texts]
            else:  # one name and type split over two messages
                row[0] = min(row[0], rrset.ttl)
                row[1].extend(texts)
    return out


def axfr_wire(server: Server, zone: str) -> Transferred:
    """The same rows as axfr_dnspython, read by wire.py (unsigned transfers)."""
    out = Transferred(zone.lower())
    rows, origin, types = out.rows, dns.name.from_text(zone).to_text().lower(), {}
    for message in _messages(server, zone, deadline=time.monotonic() + server.timeout):
        _, records = message.records()
        for owner, kind, rdclass, ttl, start, length in records:
            if kind == wire.SOA and owner.lower() == origin:
                if out.serial is None:
                    out.serial = message.soa_serial(start, length)
                    continue
                if (owner, kind, rdclass, ttl, start, length) != records[-1]:
                    raise wire.Malformed("records after the transfer's closing SOA")
                return out
            name = types.get(kind) or types.setdefault(kind, dns.rdatatype.to_text(kind))
            if out.serial is None:
                raise wire.Malformed(f"the transfer of {zone} does not start with its SOA")
            text = message.rdata_text(kind, rdclass, start, length)
            key = (owner.lower(), name)
            row = rows.get(key)
            if row is None:
                rows[key] = [ttl, [text]]
            else:
                row[0] = min(row[0], ttl)
                row[1].append(text)
    raise wire.Malformed(f"the transfer of {zone} ended before its closing SOA")


def _messages(server: Server, zone: str, deadline: float) -> Iterator[wire.Message]:
    """The transfer's messages, checked: the answers to dr's query, without an error rcode."""
    query = dns.message.make_query(zone, dns.rdatatype.AXFR)
    with socket.create_connection((server.host, server.port), timeout=server.timeout) as sock:
        data = query.to_wire()
        sock.sendall(len(data).to_bytes(2, "big") + data)
        reader = sock.makefile("rb")
        while True:
            message = wire.Message(_read(sock, reader, deadline))
            if message.id != query.id or not message.flags & 0x8000:
                raise wire.Malformed(f"an answer to another query (id {message.id}, not {query.id})")
            if message.rcode:
                raise dns.query.TransferError(message.rcode)
            yield message


def _read(sock: socket.socket, reader, deadline: float) -> bytes:
    """One length-prefixed message, before the transfer's deadline (`timeout_seconds`, as dnspython's lifetime)."""
    left = deadline - time.monotonic()
    if left <= 0:
        raise dns.exception.Timeout(timeout=0)
    sock.settimeout(left)
    try:
        size = reader.read(2)
        data = reader.read(int.from_bytes(size, "big")) if len(size) == 2 else b""
    except socket.timeout:
        raise dns.exception.Timeout(timeout=left) from None
    if len(size) < 2 or len(data) < int.from_bytes(size, "big"):
        raise TransferCut("the server closed the connection in the middle of the transfer")
    return data


def soa_query(server: Server, zone: str) -> dns.message.Message:
    """The zone's SOA, asked of the server with the same key (one UDP query)."""
    query = dns.message.make_query(zone, "SOA")
    if server.keyring:
        query.use_tsig(server.keyring, keyname=server.keyname, algorithm=server.algorithm)
    return dns.query.udp(query, server.host, port=server.port, timeout=server.timeout)
