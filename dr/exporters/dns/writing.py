"""Replaying a zone document into a destination zone, one outcome per record.

Where it sits: the exporter's restore() parses `--to` into a ReplayTarget here and calls `replay`.
dr adds to the providers the outcome of every record, the cutover map applied first, conflict
semantics (a record that exists and differs is replaced only with --overwrite; a record the
backup does not have is never deleted) and a read-back of every applied record.
  * dns://SERVER/ZONE: RFC 2136 with dnspython (rfc2136.py: batched, pipelined, bisected on
    refusal), every record set of the document, of any type.
  * route53:ZONE_ID: octoDNS's Route53 provider plans the difference record by record and applies
    it in change batches (chunked by octoDNS to the API's limits); record sets with a routing
    policy are dr's own UPSERT batches (route53_batches: 1,000 records and 32,000 characters).
    Records read by AXFR become octoDNS records here, only for this path.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

import dns.tsigkeyring

from dr.contract import Outcome, OutcomeStatus
from dr.exporters.dns import rfc2136
from dr.exporters.dns.options import absolute
from dr.exporters.dns.reading import record_from, route53_provider, route53_sets
from dr.exporters.dns.records import (ALIAS_TTL, OCTODNS_RFC2136_TYPES, ZoneDocument, fqdn, rewrite, rewrite_route53_set,
                                      rewrite_row, route53_set_targets, row_targets, targets)
from dr.exporters.dns.transfer import Server

_DNS_URL = re.compile(r"^dns://(?P<host>\[[^\]]+\]|[^/:]+)(?::(?P<port>\d+))?(?:/(?P<zone>[^/]*))?/?$")
#: ChangeResourceRecordSets limits: ResourceRecord elements and characters of their values, each
#: counted twice for an UPSERT (AWS's Route53 quotas); a change without values counts as one element
ROUTE53_RECORDS, ROUTE53_CHARS = 1000, 32_000


class BadDestination(ValueError):
    """`--to` names no zone dr can write to."""


@dataclass
class Tsig:
    name: str
    secret: str
    algorithm: str


@dataclass
class ReplayTarget:
    zone: str
    label: str
    make_provider: Callable[[], Any] | None = None  # Route53: a new one reads the zone afresh (it caches)
    route53: Any = None  # the boto3 client and zone id, for a Route53 zone
    zone_id: str = ""
    server: Server | None = None  # an RFC 2136 server, with the zone's key


def parse(to: str, zone: str, route53_client: Callable[[], Any], tsig_for: Callable[[str], Tsig | None],
          timeout: float) -> ReplayTarget:
    """`route53:HOSTED_ZONE_ID` or `dns://SERVER[:PORT][/ZONE]` (without ZONE: the backed-up zone's name)."""
    if to.startswith("route53:"):
        zone_id, client = to[len("route53:"):], route53_client()
        try:
            zone = absolute(client.get_hosted_zone(Id=zone_id)["HostedZone"]["Name"])
        except client.exceptions.NoSuchHostedZone:
            raise BadDestination(f"{to}: no such hosted zone") from None
        return ReplayTarget(zone, to, lambda: route53_provider(client, zone, zone_id), client, zone_id)
    found = _DNS_URL.match(to)
    if not found:
        raise BadDestination(f"{to!r}: give route53:HOSTED_ZONE_ID or dns://SERVER[:PORT][/ZONE]")
    host, port, zone = found["host"].strip("[]"), int(found["port"] or 53), absolute(found["zone"] or zone)
    tsig = tsig_for(zone)
    keyring = dns.tsigkeyring.from_text({tsig.name: tsig.secret}) if tsig else None
    server = Server(host, port, timeout, keyring, tsig.name if tsig else None, tsig.algorithm if tsig else "hmac-sha256")
    return ReplayTarget(zone, to, server=server)


@dataclass
class _Item:
    name: str  # the outcome's item: "FQDN TYPE"
    record: Any  # the octoDNS record to write
    remapped: list[str] = field(default_factory=list)


def _describe(record) -> str:
    values = record.data.get("values", [record.data.get("value")])
    ttl = "" if record.ttl == ALIAS_TTL else f" ttl {record.ttl}"
    return f"{record._type}{ttl} {', '.join(str(v) for v in values)}"


def _remapped(before: dict, after: dict, name: str, zone: str) -> list[str]:
    old, new = list(targets(name, before, zone)), list(targets(name, after, zone))
    return [f"{a} -> {b}" for a, b in zip(old, new) if a != b]


def replay(doc: ZoneDocument, dest: ReplayTarget, cutover: dict[str, str], dry_run: bool,
           overwrite: bool) -> Iterator[Outcome]:
    if dest.server is not None:
        wants, skipped = _rfc2136_wants(doc, dest, cutover)
        yield from skipped
        yield from rfc2136.replay(wants, dest.server, dest.zone, dest.label, dry_run, overwrite)
    else:
        yield from _replay_octodns(doc, dest, cutover, dry_run, overwrite)
    yield from _replay_route53_sets(doc, dest, cutover, dry_run, overwrite)


def restored_fingerprints(doc: ZoneDocument, dest: ReplayTarget, cutover: dict[str, str]) -> tuple[str, str]:
    """(the destination's, the backup's) fingerprints of the record sets replay() writes there
    (the cutover applied)."""
    if dest.server is None:
        return _route53_fingerprints(doc, dest, cutover)
    wants, _ = _rfc2136_wants(doc, dest, cutover)
    return rfc2136.fingerprints(wants, dest.server, dest.zone)


def _apex_ns(dest: ReplayTarget) -> Outcome:
    return Outcome(f"{dest.zone} NS", OutcomeStatus.SKIPPED,
                   "the destination zone's own name servers are kept (they delegate that zone)")


def _cut(moved: list[str]) -> str:
    return f" (cutover: {', '.join(moved)})" if moved else ""


def _rfc2136_wants(doc: ZoneDocument, dest: ReplayTarget, cutover: dict[str, str]) -> tuple[list, list[Outcome]]:
    """Every record set of the document as rdata text, the cutover applied (octoDNS's records, of a
    Route53 or format-1 document, rendered by octoDNS itself)."""
    from octodns.zone import Zone as OctoZone  # loaded only for documents in octoDNS's form (not AXFR's rows)

    wants, skipped = [], []
    for row in doc.rrsets:
        if row[0] == "" and row[1] == "NS":
            skipped.append(_apex_ns(dest))
            continue
        new = rewrite_row(row, cutover, doc.zone)
        moved = [f"{a} -> {b}" for a, b in zip(row_targets(row, doc.zone), row_targets(new, doc.zone))
                 if a != b] if new is not row else []  # rewrite_row returns the row itself when it changed nothing
        name = f"{row[0]}.{dest.zone}" if row[0] else dest.zone
        wants.append(rfc2136.Want(f"{name} {row[1]}", name, row[1], row[2], new[3], _cut(moved)))
    desired = OctoZone(dest.zone, [])
    for name, datas in sorted(doc.records.items()):
        for data in datas:
            if name == "" and data["type"] == "NS":
                skipped.append(_apex_ns(dest))
                continue
            key = f"{fqdn(name, dest.zone)} {data['type']}"
            if data["type"] not in OCTODNS_RFC2136_TYPES:
                skipped.append(Outcome(key, OutcomeStatus.SKIPPED, f"{data['type']} records cannot be written to "
                                       f"{dest.label} (a Route53 record: restore it to a Route53 zone)"))
                continue
            new = rewrite(data, cutover, doc.zone)
            rrset = record_from(desired, name, new).to_rrset()
            wants.append(rfc2136.Want(key, rrset.name, rrset._type, rrset.ttl, list(rrset.rdatas),
                                      _cut(_remapped(data, new, name, doc.zone))))
    groups: dict[tuple[str, str], list] = {}
    for raw in doc.unmodelled:  # format 1: the types octoDNS does not model, one value each
        groups.setdefault((raw["name"], raw["type"]), [raw["ttl"], []])[1].extend(raw["values"])
    for (name, kind), (ttl, values) in sorted(groups.items()):
        wants.append(rfc2136.Want(f"{fqdn(name, dest.zone)} {kind}", fqdn(name, dest.zone), kind, ttl, values))
    return wants, skipped


def _replay_octodns(doc: ZoneDocument, dest: ReplayTarget, cutover: dict[str, str], dry_run: bool,
                    overwrite: bool) -> Iterator[Outcome]:
    """Into Route53 through octoDNS: its records, and the AXFR rows it models built as its records."""
    desired, items, said = _octodns_desired(doc, dest, cutover)
    yield from said
    yield from _replay_records(dest, desired, items, dry_run, overwrite)


def _octodns_desired(doc: ZoneDocument, dest: ReplayTarget, cutover: dict[str, str]
                     ) -> tuple[Any, dict[str, _Item], list[Outcome]]:
    """(octoDNS's zone of what the backup wants there, its records by item, the outcomes of
    what cannot be written there, in document order)."""
    from octodns.record import Record
    from octodns.record.rr import Rrset
    from octodns.zone import Zone as OctoZone

    desired = OctoZone(dest.zone, [])
    items: dict[str, _Item] = {}
    supports = dest.make_provider().SUPPORTS  # octoDNS would drop the others from its plan without a word

    def add(name: str, record, moved: list[str]) -> None:
        if record._type not in supports:
            skipped.append(Outcome(f"{record.fqdn} {record._type}", OutcomeStatus.SKIPPED,
                                   f"{record._type} records cannot be written to {dest.label}"))
            return
        desired.add_record(record, lenient=True)
        items[f"{record.fqdn} {record._type}"] = _Item(f"{record.fqdn} {record._type}", record, moved)
    said: list[Outcome] = []
    skipped: list[Outcome] = []
    for name, datas in sorted(doc.records.items()):
        for data in datas:
            if name == "" and data["type"] == "NS":
                said.append(_apex_ns(dest))
                continue
            new = rewrite(data, cutover, doc.zone)
            add(name, record_from(desired, name, new), _remapped(data, new, name, doc.zone))
    for row in doc.rrsets:
        key = f"{fqdn(row[0], dest.zone)} {row[1]}"
        if row[0] == "" and row[1] == "NS":
            said.append(_apex_ns(dest))
        elif row[1] not in Record._CLASSES:
            said.append(Outcome(key, OutcomeStatus.SKIPPED, f"{row[1]} records cannot be written to {dest.label}"))
        else:
            new = rewrite_row(row, cutover, doc.zone)
            moved = [f"{a} -> {b}" for a, b in zip(row_targets(row, doc.zone), row_targets(new, doc.zone)) if a != b]
            add(row[0], Record.from_rrset(desired, Rrset(fqdn(row[0], dest.zone), row[1], row[2], new[3]),
                                          lenient=True), moved)
    for raw in doc.unmodelled:
        said.append(Outcome(f"{fqdn(raw['name'], dest.zone)} {raw['type']}", OutcomeStatus.SKIPPED,
                            f"{raw['type']} records cannot be written to {dest.label}"))
    return desired, items, said + skipped


def _route53_fingerprints(doc: ZoneDocument, dest: ReplayTarget, cutover: dict[str, str]) -> tuple[str, str]:
    """(the Route53 zone's, the backup's) fingerprints of what replay() writes there: each
    record as octoDNS reads the zone back and plans it (a record its plan would not change is
    the backup's, as octoDNS normalises both), each routing-policy set as the API returns it."""
    desired, items, _ = _octodns_desired(doc, dest, cutover)
    _, changes = _changes(dest, desired)
    held, backed, found = [], [], 0
    for key, item in sorted(items.items()):
        backed.append([key, _record_data(item.record)])
        change = changes.get(key)
        if change is not None and change.existing is None:  # a Create: nothing there
            held.append([key, "missing"])
            continue
        found += 1
        held.append([key, _record_data(item.record if change is None else change.existing)])
    wanted = [new for new, _ in _route53_wanted(doc, dest, cutover)]
    present = {_set_key(s): s for s in route53_sets(dest.route53, dest.zone_id) if "SetIdentifier" in s} \
        if wanted else {}
    for new in sorted(wanted, key=_set_key):
        backed.append([_set_key(new), new])
        there = present.get(_set_key(new))
        held.append([_set_key(new), there if there is not None else "missing"])
        found += there is not None
    total = len(backed)
    return (rfc2136.fingerprint(held, found, total) if found else ""), rfc2136.fingerprint(backed, total, total)


def _record_data(record) -> dict:
    return {"type": record._type, "ttl": record.ttl, "data": json.loads(json.dumps(record.data, default=str))}


def _changes(dest: ReplayTarget, desired) -> tuple[Any, dict[str, Any]]:
    """(the provider that planned, its creates and updates by item); deletions are never made."""
    from octodns.record import Create, Update

    provider = dest.make_provider()
    plan = provider.plan(desired)
    return provider, {f"{c.record.fqdn} {c.record._type}": c for c in (plan.changes if plan else [])
                      if isinstance(c, (Create, Update))}


def _replay_records(dest: ReplayTarget, desired, items: dict[str, _Item], dry_run: bool,
                    overwrite: bool) -> Iterator[Outcome]:
    from octodns.record import Create, Update

    try:
        provider, changes = _changes(dest, desired)
    except Exception as exc:  # the destination cannot be read: every record fails with the reason
        yield from (Outcome(i, OutcomeStatus.FAILED, f"reading {dest.label}: {type(exc).__name__}: {exc}") for i in items)
        return
    accepted, outcomes = [], {}
    for key, item in items.items():
        change = changes.get(key)
        cut = f" (cutover: {', '.join(item.remapped)})" if item.remapped else ""
        if change is None:
            outcomes[key] = Outcome(key, OutcomeStatus.UNCHANGED, f"already {_describe(item.record)} in {dest.label}{cut}")
        elif isinstance(change, Update) and not overwrite:
            outcomes[key] = Outcome(key, OutcomeStatus.CONFLICT,
                                    f"{dest.label} has {_describe(change.existing)}, the backup "
                                    f"{_describe(item.record)}{cut}; --overwrite replaces it")
        else:
            verb = "create" if isinstance(change, Create) else f"replace {_describe(change.existing)} with"
            outcomes[key] = Outcome(key, OutcomeStatus.PLANNED, f"would {verb} {_describe(item.record)}{cut}")
            accepted.append(change)
    if accepted and not dry_run:
        outcomes.update(_apply(dest, provider, desired, accepted, items))
    yield from outcomes.values()


def _apply(dest: ReplayTarget, provider, desired, accepted: list, items: dict[str, _Item]) -> dict[str, Outcome]:
    from octodns.provider.plan import Plan
    from octodns.record import Create

    keys = [f"{c.record.fqdn} {c.record._type}" for c in accepted]
    try:
        provider.apply(Plan(None, desired, accepted, True))
        _, still = _changes(dest, desired)  # read back by a new provider: nothing cached
    except Exception as exc:
        why = f"{type(exc).__name__}: {exc}"
        return {k: Outcome(k, OutcomeStatus.FAILED, f"{dest.label}: {why} (records sent before the failure "
                           "stay; run the restore again: they say unchanged)") for k in keys}
    out = {}
    for change, key in zip(accepted, keys):
        cut = f" (cutover: {', '.join(items[key].remapped)})" if items[key].remapped else ""
        if key in still:
            out[key] = Outcome(key, OutcomeStatus.FAILED, f"{dest.label} accepted the change but does not show it")
        else:
            verb = "created" if isinstance(change, Create) else f"replaced {_describe(change.existing)} with"
            out[key] = Outcome(key, OutcomeStatus.RESTORED, f"{verb} {_describe(items[key].record)} in "
                               f"{dest.label}, read back{cut}")
    return out


# -- Route53 routing-policy sets (boto3) ----------------------------------------------------------
def _reroot(name: str, old_zone: str, new_zone: str) -> str:
    name = name.lower()
    return name[: -len(old_zone)] + new_zone if name.endswith(old_zone) else name


def _set_key(rrset: dict[str, Any]) -> str:
    return f"{rrset['Name'].lower()} {rrset['Type']} set={rrset['SetIdentifier']}"


def _replay_route53_sets(doc: ZoneDocument, dest: ReplayTarget, cutover: dict[str, str], dry_run: bool,
                         overwrite: bool) -> Iterator[Outcome]:
    if not doc.route53_sets:
        return
    wanted = _route53_wanted(doc, dest, cutover)
    if dest.route53 is None:
        for new, _ in wanted:
            yield Outcome(_set_key(new), OutcomeStatus.SKIPPED, f"a Route53 {_policy(new)} record set has no "
                          f"equivalent on {dest.label}; restore it to a Route53 zone")
        return
    present = {_set_key(s): s for s in route53_sets(dest.route53, dest.zone_id) if "SetIdentifier" in s}
    send, outcomes = [], {}
    for new, moved in wanted:
        key, cut = _set_key(new), f" (cutover: {', '.join(moved)})" if moved else ""
        if present.get(key) == new:
            outcomes[key] = Outcome(key, OutcomeStatus.UNCHANGED, f"already in {dest.label} ({_policy(new)}){cut}")
        elif key in present and not overwrite:
            outcomes[key] = Outcome(key, OutcomeStatus.CONFLICT, f"{dest.label} has a different {_policy(new)} "
                                    f"set; --overwrite replaces it")
        else:
            outcomes[key] = Outcome(key, OutcomeStatus.PLANNED, f"would upsert the {_policy(new)} set{cut}")
            send.append((key, new, cut))
    if send and not dry_run:
        outcomes.update(_upsert(dest, send))
    yield from outcomes.values()


def _route53_wanted(doc: ZoneDocument, dest: ReplayTarget, cutover: dict[str, str]) -> list[tuple[dict, list[str]]]:
    """Each routing-policy set as replay() writes it (cutover applied, renamed into the zone),
    with the cutover's rewrites."""
    wanted = []
    for rrset in doc.route53_sets:
        new = rewrite_route53_set(rrset, cutover)
        new["Name"] = _reroot(new["Name"], doc.zone, dest.zone)
        wanted.append((new, [f"{a} -> {b}" for a, b in zip(route53_set_targets(rrset), route53_set_targets(new))
                             if a != b]))
    return wanted


def _policy(rrset: dict[str, Any]) -> str:
    for key, what in (("Weight", "weighted"), ("Region", "latency"), ("Failover", "failover"),
                      ("GeoLocation", "geolocation"), ("MultiValueAnswer", "multivalue")):
        if key in rrset:
            check = f", health check {rrset['HealthCheckId']}" if "HealthCheckId" in rrset else ""
            return f"{what}{check}"
    return "routing"


def route53_batches(send: list, records: int = ROUTE53_RECORDS, chars: int = ROUTE53_CHARS) -> Iterator[list]:
    """(key, record set, cut) UPSERTs in batches within the API's limits of one change batch."""
    batch, used_records, used_chars = [], 0, 0
    for item in send:
        values = [rr["Value"] for rr in item[1].get("ResourceRecords", [])]
        cost_records, cost_chars = 2 * max(len(values), 1), 2 * sum(map(len, values))
        if batch and (used_records + cost_records > records or used_chars + cost_chars > chars):
            yield batch
            batch, used_records, used_chars = [], 0, 0
        batch.append(item)
        used_records, used_chars = used_records + cost_records, used_chars + cost_chars
    if batch:
        yield batch


def _upsert(dest: ReplayTarget, send: list) -> dict[str, Outcome]:
    out = {}
    for batch in route53_batches(send):
        try:
            dest.route53.change_resource_record_sets(HostedZoneId=dest.zone_id, ChangeBatch={"Changes": [
                {"Action": "UPSERT", "ResourceRecordSet": new} for _, new, _ in batch]})
        except Exception as exc:
            out.update({k: Outcome(k, OutcomeStatus.FAILED, f"{dest.label}: {type(exc).__name__}: {exc}")
                        for k, _, _ in batch})
            continue
        out.update({k: Outcome(k, OutcomeStatus.RESTORED, f"upserted the {_policy(new)} set in {dest.label}{cut}")
                    for k, new, cut in batch})
    return out
