"""dr's own AXFR wire reader and UPDATE encoder (wire.py, update_wire.py) against dnspython and bind9.

The reader must give the artifact byte for byte what dnspython's path gives, on real bind9 zones
(every type the tests use, escapes, a transfer over many messages), and refuse hostile messages.
"""

from __future__ import annotations

import contextlib
import itertools
import socket
import struct
import threading
import time

import dns.exception
import dns.message
import dns.query
import dns.name
import dns.rdata
import dns.rdataclass
import dns.rdatatype
import pytest

from dr.exporters.dns import update_wire, wire
from dr.exporters.dns.reading import rrset_rows
from dr.exporters.dns.records import ZoneDocument
from dr.exporters.dns.transfer import Server, TransferCut, axfr_dnspython, axfr_wire
from tests.dns.conftest import SOA
from tests.servers import NamedServer

#: names and strings that need escaping, AAAA spellings, generic (unknown) types, root targets
ODD = SOA + r"""
Upper IN A 10.0.0.1
a\032b IN TXT "space"
\@at IN TXT "at"
semi\;colon IN TXT "x"
bin\200ary IN TXT "8-bit"
*.wild IN A 10.0.0.5
quote IN TXT "say \"hi\"" "back\\slash" "\255\001 tab"
empty IN TXT ""
multi IN TXT "a" "b" "c"
v4mapped IN AAAA ::ffff:10.0.0.1
v6zero IN AAAA ::
v6one IN AAAA ::1
v6 IN AAAA 2001:db8:0:0:1:0:0:1
v6b IN AAAA 2001:db8:1:2:3:4:5:6
alias IN CNAME a\032b
caa IN CAA 128 issuewild "va\"lue;x"
nomail IN MX 0 .
nosrv IN SRV 0 0 0 .
ptr IN PTR Upper
generic IN TYPE65000 \# 3 010203
"""


def _many(count: int) -> str:
    """A zone body over many AXFR messages: one name with 100 addresses (bind's most), and `count` names."""
    lines = [f"many IN A 10.1.0.{i}" for i in range(100)]
    lines += [f"host{i} 60 IN A 10.2.{i >> 8}.{i & 255}\nhost{i} IN TXT \"n={i}\"" for i in range(count)]
    return SOA + "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def bind_odd(tmp_path_factory):
    server = NamedServer(str(tmp_path_factory.mktemp("bind-odd")), {
        "odd.test": {"records": ODD}, "many.test": {"records": _many(3000)}})
    with server:
        for _ in range(100):  # the server is ready when its first zone answers; bind loads the larger one after
            answer = dns.query.udp(dns.message.make_query("many.test", "SOA"), "127.0.0.1", port=server.port, timeout=2)
            if answer.answer:
                break
            time.sleep(0.1)
        yield server


def _artifact(got) -> bytes:
    return ZoneDocument(got.zone, "dns://x/", got.serial, rrsets=rrset_rows(got)).to_bytes()


@pytest.mark.parametrize("zone", ["odd.test.", "many.test."])
def test_the_wire_reader_gives_the_artifact_dnspython_gives(bind_odd, zone):
    server = Server("127.0.0.1", bind_odd.port, 10)
    fast, slow = axfr_wire(server, zone), axfr_dnspython(server, zone)
    assert _artifact(fast) == _artifact(slow)
    assert fast.serial == 2026010101 and len(fast.rows) > 10


def test_every_type_of_the_exporter_zone_reads_the_same(bind):
    server = Server("127.0.0.1", bind.port, 10)
    fast, slow = axfr_wire(server, "example.test."), axfr_dnspython(server, "example.test.")
    assert _artifact(fast) == _artifact(slow)
    assert {kind for _, kind in fast.rows} >= {"A", "AAAA", "CNAME", "MX", "SRV", "TXT", "CAA", "PTR", "TLSA",
                                               "SSHFP", "NAPTR", "LOC", "SVCB", "HTTPS", "SPF", "HINFO", "RP", "DNAME"}


def test_the_update_encoder_gives_dnspython_wire_for_every_record(bind, bind_odd):
    for port, zone in ((bind.port, "example.test."), (bind_odd.port, "odd.test.")):
        origin = dns.name.from_text(zone)
        for (_, kind), (_, texts) in axfr_wire(Server("127.0.0.1", port, 10), zone).rows.items():
            for text in texts:
                expected = dns.rdata.from_text(dns.rdataclass.IN, dns.rdatatype.from_text(kind), text,
                                               origin=origin, relativize=False).to_wire()
                assert update_wire.rdata_wire(kind, text, origin) == expected, (kind, text)


@pytest.mark.parametrize("kind, text", [("A", "10.0.0"), ("A", "10.0.0.256"), ("MX", "x mail.test."),
                                        ("TXT", '"unterminated'), ("SRV", "1 2 70000 t.test.")])
def test_an_invalid_rdata_text_is_refused(kind, text):
    with pytest.raises((dns.exception.DNSException, ValueError)):
        update_wire.rdata_wire(kind, text, dns.name.from_text("x.test"))


# -- hostile messages ------------------------------------------------------------------------------
def _header(qd=0, an=0, message_id=1, flags=0x8400) -> bytes:
    return struct.pack("!HHHHHH", message_id, flags, qd, an, 0, 0)


def _answer(name: bytes, kind=1, rdata=b"\x0a\x00\x00\x01") -> bytes:
    return name + struct.pack("!HHIH", kind, 1, 300, len(rdata)) + rdata


@pytest.mark.parametrize("body, why", [
    (_header(an=1) + _answer(b"\xc0\x0c"), "points forward or loops"),  # a pointer to itself
    (_header(an=1) + _answer(b"\x01a\xc0\x0c"), "points forward or loops"),  # a loop through a label
    (_header(an=1) + _answer(b"\x01a\xc0\x20"), "points forward or loops"),  # a pointer ahead
    (_header(an=1) + _answer((b"\x3f" + b"x" * 63) * 5 + b"\x00"), "longer than 255"),
    (_header(an=1) + _answer(b"\x41a\x00"), "unknown label type"),
    (_header(an=2) + _answer(b"\x01a\x00"), "past the end"),  # a record announced, not sent
    (_header(an=1) + b"\x01a\x00" + struct.pack("!HHIH", 1, 1, 300, 200) + b"\x00" * 4, "past the end"),
    (_header(an=1) + b"\x05ab", "past the end"),  # a label cut short
    (b"\x00\x01\x84", "shorter than its 12-byte header"),
])
def test_a_malformed_message_is_refused(body, why):
    with pytest.raises(wire.Malformed, match=why):
        wire.Message(body).records()


def test_a_pointer_chain_through_a_whole_message_ends():
    """Each pointer must go back: a chain of 8,000 of them (pointers reach 16 KiB) is walked once."""
    chain = b"\x00" + b"".join(struct.pack("!H", 0xC000 | (23 if i == 0 else 22 + 2 * i)) for i in range(8000))
    first = b"\x00" + struct.pack("!HHIH", 65000, 1, 300, len(chain)) + chain  # the chain as a record's rdata
    last = struct.pack("!H", 0xC000 | (22 + 2 * 8000))
    _, records = wire.Message(_header(an=2) + first + _answer(last)).records()
    assert records[1][:2] == (".", 1)


class _HostileServer:
    """A TCP server that answers an AXFR query with the bytes a test gives (for the query's id)."""

    def __init__(self, answer) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port, self.answer = self.sock.getsockname()[1], answer
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        conn, _ = self.sock.accept()
        with conn, contextlib.suppress(OSError):  # dr hangs up on what it refuses
            size = int.from_bytes(conn.recv(2), "big")
            query = b""
            while len(query) < size:
                query += conn.recv(size - len(query))
            for message in self.answer(query[:2]):
                conn.sendall(len(message).to_bytes(2, "big") + message)

    def close(self) -> None:
        self.sock.close()
        self.thread.join(timeout=5)


def _soa(message_id: bytes, serial: int = 1) -> bytes:
    zone = b"\x04host\x04test\x00"
    soa = b"\x00\x00" + struct.pack("!IIIII", serial, 1, 1, 1, 1)
    return message_id + struct.pack("!HHHHH", 0x8400, 0, 1, 0, 0) + _answer(zone, 6, soa)


@pytest.mark.parametrize("answer, error, why", [
    (lambda mid: [mid + _header(an=1)[2:] + _answer(b"\xc0\x0c")], wire.Malformed, "loops"),
    (lambda mid: [_soa(mid)], TransferCut, "closed the connection"),  # no closing SOA
    (lambda mid: [struct.pack("!H", int.from_bytes(mid, "big") ^ 1) + _header()[2:]], wire.Malformed, "another query"),
    (lambda mid: [mid + _header(flags=0x8405)[2:]], dns.exception.DNSException, "REFUSED"),
    (lambda mid: [mid + _header(an=1)[2:] + _answer(b"\x04host\x04test\x00")], wire.Malformed, "start with its SOA"),
])
def test_a_hostile_server_gets_a_clear_refusal(answer, error, why):
    server = _HostileServer(answer)
    try:
        with pytest.raises(error, match=why):
            axfr_wire(Server("127.0.0.1", server.port, 5), "host.test")
    finally:
        server.close()


def test_a_server_that_never_ends_the_transfer_hits_the_deadline():
    server = _HostileServer(lambda mid: itertools.chain([_soa(mid)], itertools.repeat(mid + _header()[2:])))
    try:
        with pytest.raises(dns.exception.Timeout):
            axfr_wire(Server("127.0.0.1", server.port, 1), "host.test")
    finally:
        server.close()


def test_a_root_owner_before_a_high_type_is_not_read_as_a_pointer():
    """A root name (one 0 byte) then type 65280 (0xFF00): the fast path must not see a label and a pointer."""
    _, records = wire.Message(_header(an=1) + _answer(b"\x00", kind=0xFF00, rdata=b"\x01")).records()
    assert records[0][:2] == (".", 0xFF00)
