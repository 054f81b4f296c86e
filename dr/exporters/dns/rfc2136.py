"""Replaying record sets into a zone by RFC 2136 dynamic updates, batched and pipelined.

Why not octoDNS's Rfc2136Provider: it reads the zone into octoDNS records to plan (and dr read it
again to check), sends 1,000 changes per message on a new connection each, and fails the whole
apply at the first refused message. For 50,000 records that was 22x `nsupdate`'s time. Here:
  * the destination is read once by AXFR before (the diff) and once after (the read-back), as
    rdata text (transfer.py), compared as text (parsed by dnspython only where the text differs);
  * every accepted change is encoded to wire by update_wire.py (no dnspython object per record:
    the common types directly, the others through dnspython) into UPDATE messages up to MAX_WIRE bytes (under the
    64 KiB of a DNS message over TCP, with room for the header and the TSIG record), each signed
    with the zone's key, up to WINDOW of them in flight on one TCP connection;
  * a refused message changed nothing (an update is all or nothing), so it is split in two and
    each half sent again, down to single record sets: the others land, and the one the server
    refuses ends with its own rcode. A refusal of the key itself (NOTAUTH) is not split;
  * the read-back decides every sent record's outcome: a server may accept a message and skip
    a record in it (bind ignores a CNAME beside other data), and a record whose answer was lost
    with the connection may still have landed.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import json
import random
import socket
from collections import deque
from dataclasses import dataclass, field
from typing import Iterator

import dns.exception
import dns.message
import dns.name
import dns.rcode
import dns.rdata
import dns.rdataclass
import dns.rdatatype
import dns.tsig

from dr.contract import Outcome, OutcomeStatus
from dr.exporters.dns import update_wire
from dr.exporters.dns.transfer import Server, axfr

MAX_WIRE = 60_000  # bytes of records per message, uncompressed (a TCP DNS message is at most 65,535)
WINDOW = 4  # messages in flight on the connection: the server applies one while dr builds the next
NO_BISECT = {dns.rcode.NOTAUTH}  # the key or the zone is refused, not a record: splitting cannot help


@dataclass(slots=True)
class Want:
    """One record set as the backup (after the cutover map) has it, for one outcome."""
    key: str  # the outcome's item: "FQDN TYPE"
    name: str  # absolute owner name
    kind: str
    ttl: int
    texts: list[str]
    cut: str = ""  # " (cutover: OLD -> NEW)" when the cutover map rewrote it
    wires: list[bytes] = field(default_factory=list)  # the rdata as sent, when it must be sent

    def describe(self) -> str:
        return describe(self.kind, self.ttl, self.texts)

    def encode(self, origin: dns.name.Name) -> list[bytes]:
        """The rdata's wire forms (update_wire.py); raises dnspython's errors for an invalid text."""
        if not self.wires:
            self.wires = [update_wire.rdata_wire(self.kind, t, origin) for t in self.texts]
        return self.wires


def describe(kind: str, ttl: int, texts) -> str:
    return f"{kind} ttl {ttl} {', '.join(sorted(texts))}"


def _parsed(kind: str, texts: list[str], origin: dns.name.Name) -> set:
    rdtype = dns.rdatatype.from_text(kind)
    return {dns.rdata.from_text(dns.rdataclass.IN, rdtype, t, origin=origin, relativize=False) for t in texts}


def _same(want: Want, have: list | None, origin: dns.name.Name) -> bool:
    """Whether the zone holds the record set as wanted (TTL and values); text first, rdata if it differs
    (the backup's text may be another spelling of the same value: a case, an escape, a relative name)."""
    if have is None or have[0] != want.ttl:
        return False
    if sorted(have[1]) == sorted(want.texts):
        return True
    return _parsed(want.kind, want.texts, origin) == _parsed(want.kind, have[1], origin)


def fingerprints(wants: list[Want], server: Server, zone: str) -> tuple[str, str]:
    """(what the zone holds, what the backup has) of the record sets `wants` names, one AXFR of
    the zone, each as `_same` judges it: TTL, and the values as rdata in DNSSEC's canonical form
    (RFC 4034 6.2: a case or a relative spelling of one name is one value). Record sets the
    backup lacks are left out: a restore never deletes them. "" for the zone: none is there."""
    origin = dns.name.from_text(zone)
    present = axfr(server, zone).rows
    held, backed, found = [], [], 0
    for want in sorted(wants, key=lambda w: (w.name.lower(), w.kind)):
        key = [want.name.lower(), want.kind]
        backed.append([*key, want.ttl, _canonical(want.kind, want.texts, origin)])
        have = present.get((want.name.lower(), want.kind))
        if have is None:
            held.append([*key, "missing"])
            continue
        found += 1
        held.append([*key, have[0], _canonical(want.kind, have[1], origin)])
    return (fingerprint(held, found, len(wants)) if found else ""), fingerprint(backed, len(wants), len(wants))


def _canonical(kind: str, texts: list[str], origin: dns.name.Name) -> list[str]:
    try:
        return sorted({r.to_digestable(origin).hex() for r in _parsed(kind, texts, origin)})
    except (dns.exception.DNSException, ValueError):  # not a valid record: restore failed it, compared as text
        return sorted(texts)


def fingerprint(entries: list, found: int, total: int) -> str:
    digest = hashlib.sha256(json.dumps(entries, sort_keys=True).encode()).hexdigest()
    return f"{found}/{total} record sets, sha256 {digest}"


def replay(wants: list[Want], server: Server, zone: str, label: str, dry_run: bool,
           overwrite: bool) -> Iterator[Outcome]:
    """One outcome per record set: unchanged, conflict, planned (dry run), restored or failed."""
    origin = dns.name.from_text(zone)
    try:
        present = axfr(server, zone).rows
    except (dns.exception.DNSException, OSError) as exc:  # the destination cannot be read: every record fails
        yield from (Outcome(w.key, OutcomeStatus.FAILED, f"reading {label}: {type(exc).__name__}: {exc}")
                    for w in wants)
        return
    outcomes: dict[str, Outcome | None] = {}  # None: sent, its outcome decided by the read-back (_apply)
    send: list[tuple[Want, bool]] = []
    for want in wants:
        have = present.get((want.name.lower(), want.kind))
        try:
            if _same(want, have, origin):
                outcomes[want.key] = Outcome(want.key, OutcomeStatus.UNCHANGED, f"already {want.describe()} in "
                                             f"{label}{want.cut}")
                continue
            want.encode(origin)
        except (dns.exception.DNSException, ValueError) as exc:
            outcomes[want.key] = Outcome(want.key, OutcomeStatus.FAILED, f"not a valid {want.kind} record: {exc}")
            continue
        was = describe(want.kind, have[0], have[1]) if have else ""
        if have and not overwrite:
            outcomes[want.key] = Outcome(want.key, OutcomeStatus.CONFLICT, f"{label} has {was}, the backup "
                                         f"{want.describe()}{want.cut}; --overwrite replaces it")
            continue
        verb = f"replace {was} with" if have else "create"
        outcomes[want.key] = Outcome(want.key, OutcomeStatus.PLANNED, f"would {verb} {want.describe()}{want.cut}") \
            if dry_run else None
        send.append((want, bool(have)))
    if send and not dry_run:
        outcomes.update(_apply(send, server, zone, label, origin))
    yield from (o for o in outcomes.values() if o is not None)


def _apply(send: list[tuple[Want, bool]], server: Server, zone: str, label: str,
           origin: dns.name.Name) -> dict[str, Outcome]:
    refused, unanswered = _send(send, server, zone)
    try:
        after = axfr(server, zone).rows
    except (dns.exception.DNSException, OSError) as exc:
        after, unreadable = {}, f"; reading it back failed: {type(exc).__name__}: {exc}"
    else:
        unreadable = ""
    out = {}
    for want, replaced in send:
        if want.key in refused:
            out[want.key] = Outcome(want.key, OutcomeStatus.FAILED, f"{label} refused the update: "
                                    f"{refused[want.key]}{want.cut}")
            continue
        have = after.get((want.name.lower(), want.kind))
        if _same(want, have, origin):
            verb = "replaced" if replaced else "created"
            out[want.key] = Outcome(want.key, OutcomeStatus.RESTORED, f"{verb} {want.describe()} in {label} by "
                                    f"RFC 2136 update, read back{want.cut}")
            continue
        shows = describe(want.kind, have[0], have[1]) if have else "nothing"
        why = unanswered.get(want.key, "it accepted the update")
        out[want.key] = Outcome(want.key, OutcomeStatus.FAILED, f"{label}: {why} but shows {shows} there, not "
                                f"{want.describe()}{unreadable}{want.cut}")
    return out


# -- batching and the connection -----------------------------------------------------------------
def _records(want: Want, replace: bool) -> list[bytes]:
    """The update section's records of one record set: delete it first when it is replaced."""
    owner, kind = update_wire.name_wire(want.name), _rdtype(want.kind)
    head = [update_wire.delete_rrset(owner, kind)] if replace else []
    return head + [update_wire.record(owner, kind, want.ttl, rdata) for rdata in want.wires]


@functools.lru_cache(maxsize=None)
def _rdtype(kind: str) -> int:
    return dns.rdatatype.from_text(kind)


def _batches(send: list[tuple[Want, bool]]) -> Iterator[list[tuple[Want, bool, list[bytes]]]]:
    batch, size = [], 0
    for want, replace in send:
        records = _records(want, replace)
        cost = sum(map(len, records))
        if batch and size + cost > MAX_WIRE:
            yield batch
            batch, size = [], 0
        batch.append((want, replace, records))
        size += cost
    if batch:
        yield batch


def _key(server: Server) -> dns.tsig.Key | None:
    if not server.keyring:
        return None
    name = dns.name.from_text(server.keyname)
    return dns.tsig.Key(name, server.keyring[name], server.algorithm)


def _halves(batch: list) -> list[list]:
    middle = len(batch) // 2
    return [batch[:middle], batch[middle:]]


def _send(send: list[tuple[Want, bool]], server: Server, zone: str) -> tuple[dict[str, str], dict[str, str]]:
    """Every batch sent on one connection, WINDOW in flight; (refused: key -> rcode, unanswered: key -> why)."""
    queue = deque(_batches(send))
    pending: dict[int, tuple[bytes, list]] = {}
    zone_wire, key = dns.name.from_text(zone).to_wire(), _key(server)
    refused: dict[str, str] = {}
    ids = (n & 0xFFFF for n in itertools.count(random.randrange(0x10000)))
    try:
        with socket.create_connection((server.host, server.port), timeout=server.timeout) as sock:
            while queue or pending:
                while queue and len(pending) < WINDOW:
                    batch, message_id = queue.popleft(), next(ids)
                    wire, mac = update_wire.message(zone_wire, [r for _, _, rs in batch for r in rs], message_id, key)
                    if len(wire) > 65535:
                        if len(batch) > 1:
                            queue.extendleft(reversed(_halves(batch)))
                        else:
                            refused[batch[0][0].key] = "larger than one DNS message (64 KiB)"
                        continue
                    sock.sendall(len(wire).to_bytes(2, "big") + wire)
                    pending[message_id] = (mac, batch)
                _answer(sock, pending, queue, refused, server)
    except (OSError, dns.exception.DNSException) as exc:
        lost = [w.key for _, batch in pending.values() for w, _, _ in batch]
        lost += [w.key for batch in queue for w, _, _ in batch]
        return refused, {key: f"the connection failed ({type(exc).__name__}: {exc})" for key in lost}
    return refused, {}


def _answer(sock: socket.socket, pending: dict, queue: deque, refused: dict[str, str], server: Server) -> None:
    """Read one answer; a refused batch of several record sets is split and queued again."""
    wire = _read(sock, int.from_bytes(_read(sock, 2), "big"))
    found = pending.pop(int.from_bytes(wire[:2], "big"), None)
    if found is None:
        raise dns.exception.FormError("an answer to no update dr sent")
    mac, batch = found
    answer = dns.message.from_wire(wire, keyring=server.keyring, request_mac=mac)
    rcode = answer.rcode()
    if rcode == dns.rcode.NOERROR:
        return
    if len(batch) > 1 and rcode not in NO_BISECT:
        queue.extend(_halves(batch))
        return
    refused.update({want.key: dns.rcode.to_text(rcode) for want, _, _ in batch})


def _read(sock: socket.socket, count: int) -> bytes:
    data = b""
    while len(data) < count:
        chunk = sock.recv(count - len(data))
        if not chunk:
            raise ConnectionError("the server closed the connection")
        data += chunk
    return data
