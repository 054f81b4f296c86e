"""Replaying record sets into a zone by RFC 2136 dynamic updates (dnspython), batched and pipelined.

Why not octoDNS's Rfc2136Provider: it reads the zone into octoDNS records to plan (and dr read it
again to check), sends 1,000 changes per message on a new connection each, and fails the whole
apply at the first refused message. For 50,000 records that was 22x `nsupdate`'s time. Here:
  * the destination is read once by AXFR before (the diff) and once after (the read-back), in
    dnspython's form, compared as rdata text (parsed only where the text differs);
  * every accepted change goes into UPDATE messages filled up to MAX_WIRE bytes (under the
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

import itertools
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
import dns.rdataset
import dns.rdatatype
import dns.update

from dr.exporters.contract import Outcome, OutcomeStatus
from dr.exporters.dns.transfer import Server, axfr

MAX_WIRE = 60_000  # bytes of records per message, uncompressed (a TCP DNS message is at most 65,535)
WINDOW = 4  # messages in flight on the connection: the server applies one while dr builds the next
NO_BISECT = {dns.rcode.NOTAUTH}  # the key or the zone is refused, not a record: splitting cannot help


@dataclass
class Want:
    """One record set as the backup (after the cutover map) has it, for one outcome."""
    key: str  # the outcome's item: "FQDN TYPE"
    name: str  # absolute owner name
    kind: str
    ttl: int
    texts: list[str]
    cut: str = ""  # " (cutover: OLD -> NEW)" when the cutover map rewrote it
    rdatas: list = field(default_factory=list)  # parsed, when it must be sent or compared closely

    def describe(self) -> str:
        return describe(self.kind, self.ttl, self.texts)

    def parse(self, origin: dns.name.Name) -> list:
        if not self.rdatas:
            rdtype = dns.rdatatype.from_text(self.kind)
            self.rdatas = [dns.rdata.from_text(dns.rdataclass.IN, rdtype, t, origin=origin, relativize=False)
                           for t in self.texts]
        return self.rdatas


def describe(kind: str, ttl: int, texts) -> str:
    return f"{kind} ttl {ttl} {', '.join(sorted(texts))}"


def _same(want: Want, have: list | None, origin: dns.name.Name) -> bool:
    """Whether the zone holds the record set as wanted (TTL and values); text first, rdata if it differs."""
    if have is None or have[0] != want.ttl:
        return False
    if sorted(rd.to_text() for rd in have[1]) == sorted(want.texts):
        return True
    return set(want.parse(origin)) == set(have[1])


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
    outcomes: dict[str, Outcome] = {}
    send: list[tuple[Want, bool]] = []
    for want in wants:
        have = present.get((want.name.lower(), want.kind))
        try:
            if _same(want, have, origin):
                outcomes[want.key] = Outcome(want.key, OutcomeStatus.UNCHANGED, f"already {want.describe()} in "
                                             f"{label}{want.cut}")
                continue
            want.parse(origin)
        except (dns.exception.DNSException, ValueError) as exc:
            outcomes[want.key] = Outcome(want.key, OutcomeStatus.FAILED, f"not a valid {want.kind} record: {exc}")
            continue
        was = describe(want.kind, have[0], [rd.to_text() for rd in have[1]]) if have else ""
        if have and not overwrite:
            outcomes[want.key] = Outcome(want.key, OutcomeStatus.CONFLICT, f"{label} has {was}, the backup "
                                         f"{want.describe()}{want.cut}; --overwrite replaces it")
            continue
        verb = f"replace {was} with" if have else "create"
        outcomes[want.key] = Outcome(want.key, OutcomeStatus.PLANNED, f"would {verb} {want.describe()}{want.cut}")
        send.append((want, bool(have)))
    if send and not dry_run:
        outcomes.update(_apply(send, server, zone, label, origin))
    yield from outcomes.values()


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
        shows = describe(want.kind, have[0], [rd.to_text() for rd in have[1]]) if have else "nothing"
        why = unanswered.get(want.key, "it accepted the update")
        out[want.key] = Outcome(want.key, OutcomeStatus.FAILED, f"{label}: {why} but shows {shows} there, not "
                                f"{want.describe()}{unreadable}{want.cut}")
    return out


# -- batching and the connection -----------------------------------------------------------------
def _cost(want: Want, replace: bool) -> int:
    """An upper bound of the record set's bytes in an UPDATE (names uncompressed)."""
    owner = len(want.name) + 1 + 10  # name, type, class, TTL, rdlength
    return owner * (len(want.rdatas) + replace) + sum(len(rd.to_wire()) for rd in want.rdatas)


def _batches(send: list[tuple[Want, bool]]) -> Iterator[list[tuple[Want, bool]]]:
    batch, size = [], 0
    for want, replace in send:
        cost = _cost(want, replace)
        if batch and size + cost > MAX_WIRE:
            yield batch
            batch, size = [], 0
        batch.append((want, replace))
        size += cost
    if batch:
        yield batch


def _message(batch: list[tuple[Want, bool]], server: Server, zone: str, message_id: int) -> dns.update.UpdateMessage:
    update = dns.update.UpdateMessage(zone, keyring=server.keyring, keyname=server.keyname,
                                      keyalgorithm=server.algorithm, id=message_id)
    for want, replace in batch:
        rdataset = dns.rdataset.from_rdata_list(want.ttl, want.rdatas)
        (update.replace if replace else update.add)(want.name, rdataset)
    return update


def _halves(batch: list) -> list[list]:
    middle = len(batch) // 2
    return [batch[:middle], batch[middle:]]


def _send(send: list[tuple[Want, bool]], server: Server, zone: str) -> tuple[dict[str, str], dict[str, str]]:
    """Every batch sent on one connection, WINDOW in flight; (refused: key -> rcode, unanswered: key -> why)."""
    queue = deque(_batches(send))
    pending: dict[int, tuple[dns.message.Message, list]] = {}
    refused: dict[str, str] = {}
    ids = (n & 0xFFFF for n in itertools.count(random.randrange(0x10000)))
    try:
        with socket.create_connection((server.host, server.port), timeout=server.timeout) as sock:
            while queue or pending:
                while queue and len(pending) < WINDOW:
                    batch = queue.popleft()
                    update = _message(batch, server, zone, next(ids))
                    try:
                        wire = update.to_wire(max_size=65535)
                    except dns.exception.TooBig:
                        if len(batch) > 1:
                            queue.extendleft(reversed(_halves(batch)))
                        else:
                            refused[batch[0][0].key] = "larger than one DNS message (64 KiB)"
                        continue
                    sock.sendall(len(wire).to_bytes(2, "big") + wire)
                    pending[update.id] = (update, batch)
                _answer(sock, pending, queue, refused)
    except (OSError, dns.exception.DNSException) as exc:
        lost = [w.key for _, batch in pending.values() for w, _ in batch]
        lost += [w.key for batch in queue for w, _ in batch]
        return refused, {key: f"the connection failed ({type(exc).__name__}: {exc})" for key in lost}
    return refused, {}


def _answer(sock: socket.socket, pending: dict, queue: deque, refused: dict[str, str]) -> None:
    """Read one answer; a refused batch of several record sets is split and queued again."""
    wire = _read(sock, int.from_bytes(_read(sock, 2), "big"))
    found = pending.pop(int.from_bytes(wire[:2], "big"), None)
    if found is None:
        raise dns.exception.FormError("an answer to no update dr sent")
    update, batch = found
    answer = dns.message.from_wire(wire, keyring=update.keyring, request_mac=update.mac)
    rcode = answer.rcode()
    if rcode == dns.rcode.NOERROR:
        return
    if len(batch) > 1 and rcode not in NO_BISECT:
        queue.extend(_halves(batch))
        return
    refused.update({want.key: dns.rcode.to_text(rcode) for want, _ in batch})


def _read(sock: socket.socket, count: int) -> bytes:
    data = b""
    while len(data) < count:
        chunk = sock.recv(count - len(data))
        if not chunk:
            raise ConnectionError("the server closed the connection")
        data += chunk
    return data
