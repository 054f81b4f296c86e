"""RFC 2136 UPDATE messages built as bytes: rdata text to wire for the common types, dnspython for the rest.

Why: parsing 50,000 rdata texts into dnspython objects and rendering them into UpdateMessages was
the replay's largest cost after the transfers. The common forms (what an AXFR row holds: absolute
names without escapes, dotted quads, plain quoted strings, decimal fields) are encoded here; any
other text goes through `dns.rdata.from_text(...).to_wire()`, which also rejects what is invalid.
A TSIG-signed message is signed with dnspython's `dns.tsig.sign` (RFC 8945: the MAC covers the
message as sent, without the TSIG record, and the answer is verified against that MAC).
"""

from __future__ import annotations

import functools
import re
import socket
import struct
import time

import dns.name
import dns.rdata
import dns.rdataclass
import dns.rdatatype
import dns.rdtypes.ANY.TSIG
import dns.tsig

UPDATE_FLAGS = 5 << 11  # opcode UPDATE
IN, ANY = 1, 255
TSIG, SOA = 250, 6
FUDGE = 300
_QUOTED = re.compile(r'"([ !#-\[\]-~]*)"')  # a quoted string without escapes: printable ASCII but " and \


def name_wire(text: str) -> bytes:
    """An absolute name's uncompressed wire form (escaped, relative or non-ASCII ones: dnspython).
    Owners share their zone: the suffix after the first label is encoded once (cached)."""
    head, dot, tail = text.partition(".")
    if dot and 0 < len(head) < 64 and len(text) < 255 and "\\" not in text and text.isascii():
        return bytes((len(head),)) + head.encode() + _suffix(tail)
    return _slow_name(text)


@functools.lru_cache(maxsize=4096)
def _suffix(text: str) -> bytes:
    return b"\x00" if text == "" else name_wire(text)


def _slow_name(text: str) -> bytes:
    return b"\x00" if text == "." else dns.name.from_text(text).to_wire()


def _u16(text: str) -> int | None:
    return int(text) if text.isascii() and text.isdigit() and int(text) < 0x10000 else None


def _plain_name(text: str) -> bytes | None:
    """An absolute name (a relative one is relative to the zone in rdata text: dnspython reads it)."""
    return name_wire(text) if text.endswith(".") else None


def _common(kind: str, text: str) -> bytes | None:
    """The rdata's wire form for the forms an AXFR row holds; None: let dnspython read it."""
    if kind == "A":
        try:
            return socket.inet_pton(socket.AF_INET, text)
        except OSError:
            return None
    if kind in ("CNAME", "NS", "PTR", "DNAME"):
        return _plain_name(text)
    fields = text.split(" ")
    if kind == "MX" and len(fields) == 2:
        preference, exchange = _u16(fields[0]), _plain_name(fields[1])
        return None if preference is None or exchange is None else struct.pack("!H", preference) + exchange
    if kind == "SRV" and len(fields) == 4:
        numbers, target = [_u16(f) for f in fields[:3]], _plain_name(fields[3])
        return None if None in numbers or target is None else struct.pack("!HHH", *numbers) + target
    if kind in ("TXT", "SPF"):
        return _strings(text)
    if kind == "AAAA":
        try:
            return socket.inet_pton(socket.AF_INET6, text)
        except OSError:
            return None
    return None


def _strings(text: str) -> bytes | None:
    out, pos = [], 0
    while True:
        found = _QUOTED.match(text, pos)
        if not found or len(found[1]) > 255:
            return None
        out.append(bytes((len(found[1]),)) + found[1].encode("ascii"))
        pos = found.end()
        if pos == len(text):
            return b"".join(out)
        if text[pos] != " ":
            return None
        pos += 1


def rdata_wire(kind: str, text: str, origin: dns.name.Name) -> bytes:
    """The rdata of one record as wire bytes; raises (dnspython's errors) when the text is invalid."""
    wire = _common(kind, text)
    if wire is None:
        rdata = dns.rdata.from_text(dns.rdataclass.IN, dns.rdatatype.from_text(kind), text, origin=origin,
                                    relativize=False)
        wire = rdata.to_wire()
    return wire


def record(owner: bytes, kind: int, ttl: int, rdata: bytes) -> bytes:
    return owner + struct.pack("!HHIH", kind, IN, ttl, len(rdata)) + rdata


def delete_rrset(owner: bytes, kind: int) -> bytes:
    """RFC 2136 2.5.2: delete an RRset (class ANY, TTL 0, no rdata)."""
    return owner + struct.pack("!HHIH", kind, ANY, 0, 0)


def message(zone: bytes, records: list[bytes], message_id: int, key: dns.tsig.Key | None) -> tuple[bytes, bytes]:
    """(the UPDATE message of `records` for `zone` (its wire name), the request MAC: b"" unsigned)."""
    body = b"".join(records)
    wire = struct.pack("!HHHHHH", message_id, UPDATE_FLAGS, 1, 0, len(records), 0) + zone + \
        struct.pack("!HH", SOA, IN) + body
    if key is None:
        return wire, b""
    unsigned = dns.rdtypes.ANY.TSIG.TSIG(dns.rdataclass.ANY, dns.rdatatype.TSIG, key.algorithm, 0, FUDGE, b"",
                                         message_id, 0, b"")
    tsig, _ = dns.tsig.sign(wire, key, unsigned, int(time.time()), b"")
    rdata = tsig.to_wire()
    signed = wire[:10] + struct.pack("!H", 1) + wire[12:] + key.name.to_wire() + \
        struct.pack("!HHIH", TSIG, ANY, 0, len(rdata)) + rdata
    return signed, tsig.mac
