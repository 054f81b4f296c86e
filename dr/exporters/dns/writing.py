"""Replaying a zone document into a destination zone, one outcome per record.

Where it sits: the exporter's restore() parses `--to` into a Destination zone here and calls
`replay`. octoDNS does the work it is built for: the destination's provider (octodns-bind's
RFC 2136 provider, octodns-route53's provider) reads the zone as it is, `plan()` diffs it
against the backup record by record, and `apply()` sends the changes (RFC 2136 updates with
TSIG in batches, Route53 change batches chunked to its limits). dr adds the outcome of every
record, the cutover map applied before planning, conflict semantics (a record that exists and
differs is replaced only with --overwrite; a record the backup does not have is never
deleted), a check that every applied record reads back as planned, and the two kinds of record
octoDNS cannot write: Route53 routing-policy sets (boto3 UPSERT batches) and types octoDNS has
no model for (dnspython RFC 2136 updates).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

import dns.exception
import dns.message
import dns.name
import dns.query
import dns.rcode
import dns.rdata
import dns.rdataclass
import dns.rdatatype
import dns.tsig
import dns.tsigkeyring
import dns.update
from octodns.provider.plan import Plan
from octodns.record import Create, Update
from octodns.zone import Zone as OctoZone
from octodns_bind import Rfc2136Provider

from dr.exporters.contract import Outcome, OutcomeStatus
from dr.exporters.dns.options import absolute
from dr.exporters.dns.reading import record_from, route53_provider, route53_sets
from dr.exporters.dns.records import (ALIAS_TTL, ZoneDocument, fqdn, rewrite, rewrite_route53_set, route53_set_targets,
                                      targets)

_DNS_URL = re.compile(r"^dns://(?P<host>\[[^\]]+\]|[^/:]+)(?::(?P<port>\d+))?(?:/(?P<zone>[^/]*))?/?$")
ROUTE53_BATCH = 500  # changes per ChangeResourceRecordSets call (the API allows 1000 and 32,000 characters)


class BadDestination(ValueError):
    """`--to` names no zone dr can write to."""


@dataclass
class Tsig:
    name: str
    secret: str
    algorithm: str


@dataclass
class Destination:
    zone: str
    label: str
    make_provider: Callable[[], Any]  # a new one reads the zone afresh (Route53's provider caches it)
    route53: Any = None  # the boto3 client and zone id, for a Route53 zone
    zone_id: str = ""
    server: tuple[str, int] | None = None
    tsig: Tsig | None = None


def parse(to: str, zone: str, route53_client: Callable[[], Any], tsig_for: Callable[[str], Tsig | None],
          timeout: float) -> Destination:
    """`route53:HOSTED_ZONE_ID` or `dns://SERVER[:PORT][/ZONE]` (without ZONE: the backed-up zone's name)."""
    if to.startswith("route53:"):
        zone_id, client = to[len("route53:"):], route53_client()
        try:
            zone = absolute(client.get_hosted_zone(Id=zone_id)["HostedZone"]["Name"])
        except client.exceptions.NoSuchHostedZone:
            raise BadDestination(f"{to}: no such hosted zone") from None
        return Destination(zone, to, lambda: route53_provider(client, zone, zone_id), client, zone_id)
    found = _DNS_URL.match(to)
    if not found:
        raise BadDestination(f"{to!r}: give route53:HOSTED_ZONE_ID or dns://SERVER[:PORT][/ZONE]")
    host, port, zone = found["host"].strip("[]"), int(found["port"] or 53), absolute(found["zone"] or zone)
    tsig = tsig_for(zone)
    def provider() -> Rfc2136Provider:
        return Rfc2136Provider("dr", host, port=port, timeout=timeout, key_name=tsig.name if tsig else None,
                               key_secret=tsig.secret if tsig else None,
                               key_algorithm=tsig.algorithm if tsig else None, strict_supports=False)
    return Destination(zone, to, provider, server=(host, port), tsig=tsig)


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


def replay(doc: ZoneDocument, dest: Destination, cutover: dict[str, str], dry_run: bool,
           overwrite: bool) -> Iterator[Outcome]:
    desired = OctoZone(dest.zone, [])
    items: dict[str, _Item] = {}
    for name, datas in sorted(doc.records.items()):
        for data in datas:
            if name == "" and data["type"] == "NS":
                yield Outcome(f"{dest.zone} NS", OutcomeStatus.SKIPPED,
                              "the destination zone's own name servers are kept (they delegate that zone)")
                continue
            new = rewrite(data, cutover, doc.zone)
            record = record_from(desired, name, new)
            desired.add_record(record, lenient=True)
            items[f"{record.fqdn} {record._type}"] = _Item(f"{record.fqdn} {record._type}", record,
                                                           _remapped(data, new, name, doc.zone))
    yield from _replay_records(dest, desired, items, dry_run, overwrite)
    yield from _replay_route53_sets(doc, dest, cutover, dry_run, overwrite)
    yield from _replay_unmodelled(doc, dest, dry_run, overwrite)


def _changes(dest: Destination, desired: OctoZone) -> tuple[Any, dict[str, Any]]:
    """(the provider that planned, its creates and updates by item); deletions are never made."""
    provider = dest.make_provider()
    plan = provider.plan(desired)
    return provider, {f"{c.record.fqdn} {c.record._type}": c for c in (plan.changes if plan else [])
                      if isinstance(c, (Create, Update))}


def _replay_records(dest: Destination, desired: OctoZone, items: dict[str, _Item], dry_run: bool,
                    overwrite: bool) -> Iterator[Outcome]:
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


def _apply(dest: Destination, provider, desired: OctoZone, accepted: list,
           items: dict[str, _Item]) -> dict[str, Outcome]:
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


def _replay_route53_sets(doc: ZoneDocument, dest: Destination, cutover: dict[str, str], dry_run: bool,
                         overwrite: bool) -> Iterator[Outcome]:
    if not doc.route53_sets:
        return
    wanted = []
    for rrset in doc.route53_sets:
        new = rewrite_route53_set(rrset, cutover)
        new["Name"] = _reroot(new["Name"], doc.zone, dest.zone)
        wanted.append((new, [f"{a} -> {b}" for a, b in zip(route53_set_targets(rrset), route53_set_targets(new))
                             if a != b]))
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


def _policy(rrset: dict[str, Any]) -> str:
    for key, what in (("Weight", "weighted"), ("Region", "latency"), ("Failover", "failover"),
                      ("GeoLocation", "geolocation"), ("MultiValueAnswer", "multivalue")):
        if key in rrset:
            check = f", health check {rrset['HealthCheckId']}" if "HealthCheckId" in rrset else ""
            return f"{what}{check}"
    return "routing"


def _upsert(dest: Destination, send: list) -> dict[str, Outcome]:
    out = {}
    for start in range(0, len(send), ROUTE53_BATCH):
        batch = send[start:start + ROUTE53_BATCH]
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


# -- types octoDNS does not model (dnspython RFC 2136) -----------------------------------------------
def _replay_unmodelled(doc: ZoneDocument, dest: Destination, dry_run: bool, overwrite: bool) -> Iterator[Outcome]:
    groups: dict[tuple[str, str], dict[str, Any]] = {}
    for raw in doc.unmodelled:
        group = groups.setdefault((raw["name"], raw["type"]), {"ttl": raw["ttl"], "values": []})
        group["values"] += raw["values"]
    for (name, kind), group in sorted(groups.items()):
        key = f"{fqdn(name, dest.zone)} {kind}"
        if dest.server is None:
            yield Outcome(key, OutcomeStatus.SKIPPED, f"{kind} records cannot be written to {dest.label}")
            continue
        try:
            yield _one_unmodelled(dest, key, fqdn(name, dest.zone), kind, group, dry_run, overwrite)
        except (dns.exception.DNSException, OSError) as exc:
            yield Outcome(key, OutcomeStatus.FAILED, f"{dest.label}: {type(exc).__name__}: {exc}")


def _one_unmodelled(dest: Destination, key: str, name: str, kind: str, group: dict, dry_run: bool,
                    overwrite: bool) -> Outcome:
    origin = dns.name.from_text(dest.zone)
    wanted = {dns.rdata.from_text(dns.rdataclass.IN, kind, v, origin=origin, relativize=False) for v in group["values"]}
    present = _present(dest, name, kind)
    if present == wanted:
        return Outcome(key, OutcomeStatus.UNCHANGED, f"already {kind} ({len(wanted)} values) in {dest.label}")
    if present and not overwrite:
        return Outcome(key, OutcomeStatus.CONFLICT, f"{dest.label} has other {kind} values; --overwrite replaces them")
    if dry_run:
        return Outcome(key, OutcomeStatus.PLANNED, f"would {'replace' if present else 'create'} {kind} "
                       f"({len(wanted)} values) by RFC 2136 update")
    keyring = dns.tsigkeyring.from_text({dest.tsig.name: dest.tsig.secret}) if dest.tsig else None
    update = dns.update.UpdateMessage(dest.zone, keyring=keyring, keyalgorithm=dest.tsig.algorithm if dest.tsig else
                                      dns.tsig.default_algorithm)
    update.replace(name, group["ttl"], *wanted)
    answer = dns.query.tcp(update, dest.server[0], port=dest.server[1], timeout=10)
    if answer.rcode() != dns.rcode.NOERROR:
        return Outcome(key, OutcomeStatus.FAILED, f"{dest.label} refused the update: {dns.rcode.to_text(answer.rcode())}")
    return Outcome(key, OutcomeStatus.RESTORED, f"wrote {kind} ({len(wanted)} values) to {dest.label} by RFC 2136 update")


def _present(dest: Destination, name: str, kind: str) -> set:
    query = dns.message.make_query(name, kind)
    answer = dns.query.tcp(query, dest.server[0], port=dest.server[1], timeout=10)
    return {r for rrset in answer.answer if rrset.rdtype == dns.rdatatype.from_text(kind) for r in rrset}
