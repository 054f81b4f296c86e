"""dr's own reader of DNS messages: names and rdata straight from the wire to presentation text.

Why: dnspython builds a Name and an Rdata object per record and hashes each into its rrset; for
a 50,000-record AXFR that was ~6 s of CPU where `dig` prints the same wire in 0.5 s. Here each
record is read with struct and its rdata turned into the exact text dnspython's `to_text()` gives
(names absolute, escaped as dnspython escapes them), for the common types; any other type is
handed to dnspython's own rdata parser (`dns.rdata.from_wire`), so the text is dnspython's.

The input is hostile until proven otherwise (a server, or whatever answers on its port):
  * every read is bounds-checked: a record or name running past the message is refused;
  * a compression pointer must point before the name it is in, and each further pointer before
    the previous one (dnspython's rule): pointer loops cannot happen, a name takes at most
    16,384 pointer hops (pointers are 14-bit offsets), and a decoded name is at most 255 bytes (RFC 1035);
  * a malformed message raises Malformed (a dnspython FormError: callers catch one kind).
"""

from __future__ import annotations

import struct

import dns.exception
import dns.ipv6
import dns.rdata
import dns.rdataclass
import dns.rdatatype

HEADER = struct.Struct("!HHHHHH")
RECORD = struct.Struct("!HHIH")  # type, class, TTL, rdlength
U16 = struct.Struct("!H")
MAX_NAME = 255
A, NS, CNAME, SOA, PTR, MX, TXT, AAAA, SRV, DNAME, SPF, CAA = 1, 2, 5, 6, 12, 15, 16, 28, 33, 39, 99, 257
#: bytes a label shows as themselves (dnspython escapes the others: `"().;\@$`, space, controls, 8-bit)
_NAME_PLAIN = bytes(c for c in range(0x21, 0x7F) if c not in b'"().;\\@$')
#: bytes a quoted string (TXT, CAA) shows as themselves
_QUOTED_PLAIN = bytes(c for c in range(0x20, 0x7F) if c not in b'"\\')


class Malformed(dns.exception.FormError):
    """A message dr refuses to read; the text says where it went wrong."""


def _label_text(label: bytes) -> str:
    if not label.translate(None, _NAME_PLAIN):
        return label.decode("ascii")
    return "".join("\\" + chr(c) if c in b'"().;\\@$' else chr(c) if 0x20 < c < 0x7F else f"\\{c:03d}"
                   for c in label)


def quoted(data: bytes) -> str:
    """A character-string as dnspython's rdata `_escapify` shows it (without the quotes)."""
    if not data.translate(None, _QUOTED_PLAIN):
        return data.decode("ascii")
    return "".join("\\" + chr(c) if c in b'"\\' else chr(c) if 0x20 <= c < 0x7F else f"\\{c:03d}" for c in data)


class Message:
    """One DNS message: its header fields, and names read with a cache of the suffixes seen
    (compressed names point at earlier ones: each suffix is decoded once per message)."""

    def __init__(self, wire: bytes) -> None:
        if len(wire) < HEADER.size:
            raise Malformed(f"a DNS message of {len(wire)} bytes is shorter than its 12-byte header")
        self.wire = wire
        self.id, self.flags, self.qdcount, self.ancount, self.nscount, self.arcount = HEADER.unpack_from(wire)
        self._names: dict[int, tuple[str, int]] = {}  # offset -> (text of the suffix there, its wire length)

    @property
    def rcode(self) -> int:
        return self.flags & 0xF

    def name(self, offset: int) -> tuple[str, int]:
        """(the name at `offset` as absolute text, the offset after it in place)."""
        wire, names = self.wire, self._names
        # the usual owner: one label, then a pointer back to a suffix already read (the zone's name)
        stop = offset + 1 + (wire[offset] if offset < len(wire) else 0)
        if offset + 1 < stop < offset + 65 and stop + 1 < len(wire) and wire[stop] >= 0xC0:
            target = ((wire[stop] & 0x3F) << 8) | wire[stop + 1]
            hit = names.get(target) if target < offset else None
            label = wire[offset + 1:stop]
            if hit is not None and hit[1] + stop - offset <= MAX_NAME and not label.translate(None, _NAME_PLAIN):
                tail = f"{label.decode('ascii')}.{hit[0]}"
                names[offset] = (tail, hit[1] + stop - offset)
                return tail, stop + 2
        return self._name(offset)

    def _name(self, offset: int) -> tuple[str, int]:
        wire, names, size = self.wire, self._names, len(self.wire)
        labels: list[tuple[int, str, int]] = []  # (offset, text, wire length) of the labels before the cached tail
        pos, limit, end, walked = offset, offset, -1, 0
        while True:
            hit = names.get(pos)
            if hit is not None:
                tail, length = hit
                break
            if pos >= size:
                raise Malformed(f"a name at byte {offset} runs past the end of the message")
            count = wire[pos]
            if count == 0:
                tail, length = "", 1
                if end < 0:
                    end = pos + 1
                break
            if count >= 0xC0:
                if pos + 1 >= size:
                    raise Malformed(f"a name at byte {offset} runs past the end of the message")
                target = ((count & 0x3F) << 8) | wire[pos + 1]
                if end < 0:
                    end = pos + 2
                if target >= limit:
                    raise Malformed(f"a compression pointer at byte {pos} points forward or loops (to {target})")
                pos = limit = target
                continue
            if count > 63:
                raise Malformed(f"an unknown label type {count:#x} at byte {pos}")
            stop = pos + 1 + count
            if stop > size:
                raise Malformed(f"a name at byte {offset} runs past the end of the message")
            walked += count + 1
            if walked >= MAX_NAME:
                raise Malformed(f"a name at byte {offset} is longer than {MAX_NAME} bytes")
            label = wire[pos + 1:stop]
            labels.append((pos, label.decode("ascii") if not label.translate(None, _NAME_PLAIN) else _label_text(label),
                           count + 1))
            pos = stop
        for label_at, text, label_length in reversed(labels):
            tail, length = f"{text}.{tail}", length + label_length
            if length > MAX_NAME:
                raise Malformed(f"a name at byte {offset} is longer than {MAX_NAME} bytes")
            names[label_at] = (tail, length)
        if end < 0:  # the name was cached where it starts
            end = self._skip(offset)
        return tail or ".", end

    def _skip(self, offset: int) -> int:
        """The offset after the (already read, so well-formed) name at `offset`."""
        wire, pos = self.wire, offset
        while wire[pos] and wire[pos] < 0xC0:
            pos += 1 + wire[pos]
        return pos + (2 if wire[pos] else 1)

    def records(self) -> tuple[int, list[tuple[str, int, int, int, int, int]]]:
        """(offset after the question section, the answer section's records as (owner, type, class,
        TTL, rdata offset, rdata length))."""
        wire, size, pos = self.wire, len(self.wire), HEADER.size
        for _ in range(self.qdcount):
            pos = self.name(pos)[1] + 4
            if pos > size:
                raise Malformed("the question section runs past the end of the message")
        out = []
        for _ in range(self.ancount):
            owner, pos = self.name(pos)
            if pos + RECORD.size > size:
                raise Malformed(f"a record of {owner} runs past the end of the message")
            kind, rdclass, ttl, rdlength = RECORD.unpack_from(wire, pos)
            pos += RECORD.size
            if pos + rdlength > size:
                raise Malformed(f"the rdata of {owner} runs past the end of the message")
            out.append((owner, kind, rdclass, ttl, pos, rdlength))
            pos += rdlength
        return pos, out

    # -- rdata -------------------------------------------------------------------------------------
    def rdata_text(self, kind: int, rdclass: int, start: int, length: int) -> str:
        """The rdata as dnspython's `to_text()` shows it, names absolute."""
        text = self._common(kind, start, length) if rdclass == 1 else None
        if text is None:  # another type, or a form the fast path does not vouch for: dnspython decides
            rdata = dns.rdata.from_wire(dns.rdataclass.RdataClass.make(rdclass), dns.rdatatype.RdataType.make(kind),
                                        self.wire, start, length)
            text = rdata.to_text()
        return text

    def _common(self, kind: int, start: int, length: int) -> str | None:
        wire, end = self.wire, start + length
        if kind == A and length == 4:
            return "%d.%d.%d.%d" % (wire[start], wire[start + 1], wire[start + 2], wire[start + 3])
        if kind in (CNAME, NS, PTR, DNAME):
            return self._name_exactly(start, end)
        if kind == MX and length > 2:
            exchange = self._name_exactly(start + 2, end)
            return None if exchange is None else f"{U16.unpack_from(wire, start)[0]} {exchange}"
        if kind == SRV and length > 6:
            target = self._name_exactly(start + 6, end)
            return None if target is None else "%d %d %d %s" % (*struct.unpack_from("!HHH", wire, start), target)
        if kind in (TXT, SPF):
            return self._strings(start, end)
        if kind == AAAA and length == 16:
            return dns.ipv6.inet_ntoa(wire[start:end])
        if kind == CAA and length > 2:
            tag_end = start + 2 + wire[start + 1]
            tag = wire[start + 2:tag_end]
            if tag_end > end or not tag.isalnum():  # dnspython refuses such tags: let it say so
                return None
            return f'{wire[start]} {quoted(tag)} "{quoted(wire[tag_end:end])}"'
        return None

    def _name_exactly(self, start: int, end: int) -> str | None:
        """A name filling the rdata to its end (else None: dnspython reports what is wrong)."""
        text, after = self.name(start)
        return text if after == end else None

    def _strings(self, start: int, end: int) -> str | None:
        wire, pos, parts = self.wire, start, []
        while pos < end:
            stop = pos + 1 + wire[pos]
            if stop > end:
                return None
            parts.append(f'"{quoted(wire[pos + 1:stop])}"')
            pos = stop
        return " ".join(parts) or None

    def soa_serial(self, start: int, length: int) -> int:
        pos = self._skip_checked(self._skip_checked(start, start + length), start + length)
        if pos + 20 != start + length:
            raise Malformed("a SOA record of the wrong length")
        return struct.unpack_from("!I", self.wire, pos)[0]

    def _skip_checked(self, start: int, end: int) -> int:
        after = self.name(start)[1]
        if after > end:
            raise Malformed("a name runs past the end of its record")
        return after
