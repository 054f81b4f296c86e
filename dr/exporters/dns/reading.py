"""Reading a zone: AXFR with dnspython, Route53 through octoDNS, and what dr adds around them.

Where it sits: the exporter asks for the change token first (cheap: one SOA query, or one listing
of Route53 record sets) and reads the zone only when the token moved (inside the content callable).

AXFR (transfer.py): one streamed transfer (dr's wire reader; dnspython's when TSIG-signed), kept as rows of rdata
text (the artifact's `rrsets`); no octoDNS record is built (that cost ~25 s of CPU per 50,000
records, 74x `dig AXFR`'s time). Every type the server holds is kept, modelled by octoDNS or not.
The SOA serial is the change token, and the serial the transfer itself carried must equal the
one the token was taken from, or the zone moved between the two: the transfer is repeated
(`transfer_attempts`), then fails with both serials named.

Route53: `octodns_route53.Route53Provider` as a source (plain records and aliases) in octoDNS's
zone form. What dr fills in, and why:
  * Route53 record sets with a SetIdentifier (weighted, latency, failover ... and their health
    check ids): octoDNS's source keeps only the first set of a name and type it did not create,
    so they are read with boto3 and kept verbatim. Their listing is also the change token.
  * Route53 zones that share a name (a public and a private one, or two in two accounts): the
    hosted zone id from the plan is pinned in the provider, which otherwise refuses them.
"""

from __future__ import annotations

import hashlib
import json
import logging
from typing import Any

import dns.exception
import dns.rdatatype
import dns.rcode
import dns.tsigkeyring

from dr.exporters.dns.options import Aws, Zone
from dr.exporters.dns.records import ZoneDocument
from dr.exporters.dns.transfer import Server, Transferred, axfr, soa_query

logging.getLogger("octodns").setLevel(logging.WARNING)  # its INFO lines would drown dr's own


class ZoneUnreadable(Exception):
    """The zone could not be read; the message says why in the server's own words."""


# -- AXFR ---------------------------------------------------------------------------------------
def axfr_server(spec: Zone, secret: str | None, timeout: float) -> Server:
    tsig = spec.axfr.tsig
    keyring = dns.tsigkeyring.from_text({tsig.name: secret}) if tsig else None
    return Server(spec.axfr.server, spec.axfr.port, timeout, keyring, tsig.name if tsig else None,
                  tsig.algorithm if tsig else "hmac-sha256")


def zone_from_xfr(server: Server, zone: str) -> Transferred:
    """One AXFR (a name of its own so a test can move the zone between the serial and the transfer)."""
    try:
        return axfr(server, zone)
    except dns.exception.DNSException as exc:
        raise ZoneUnreadable(f"AXFR of {zone} from {server.label()} failed: {type(exc).__name__}: {exc}") from None


def soa_serial(server: Server, zone: str) -> int:
    """The zone's serial now, asked of the same server with the same key (one UDP query)."""
    try:
        answer = soa_query(server, zone)
    except dns.exception.DNSException as exc:
        raise ZoneUnreadable(f"SOA query for {zone} at {server.label()}: {type(exc).__name__}: {exc}")
    soa = [r for rrset in answer.answer for r in rrset if r.rdtype == dns.rdatatype.SOA]
    if not soa:
        raise ZoneUnreadable(f"{server.label()} is not authoritative for {zone} "
                             f"({dns.rcode.to_text(answer.rcode())}, no SOA)")
    return soa[0].serial


def read_axfr(server: Server, spec: Zone, expected_serial: int, attempts: int) -> ZoneDocument:
    """The zone at `expected_serial`: retried while the transfer carries another serial."""
    seen = []
    for _ in range(attempts):
        got = zone_from_xfr(server, spec.zone)
        if got.serial == expected_serial:
            return ZoneDocument(spec.zone, f"dns://{spec.axfr.server}:{spec.axfr.port}/{spec.zone}", got.serial,
                                rrsets=rrset_rows(got))
        seen.append(got.serial)
        expected_serial = soa_serial(server, spec.zone)
    raise ZoneUnreadable(f"{spec.zone} kept changing during the transfer (serials {', '.join(map(str, seen))}); "
                         "back it up again when its updates settle")


def rrset_rows(got: Transferred) -> list[list]:
    """The document's rows, sorted: [relative name, TYPE, ttl, [rdata text, ...]]."""
    return [[got.relative(fqdn), kind, ttl, sorted(texts)] for (fqdn, kind), (ttl, texts) in sorted(got.rows.items())]


def _document(zone, origin: str, route53_sets=()) -> ZoneDocument:
    records: dict[str, list[dict[str, Any]]] = {}
    for record in sorted(zone.records, key=lambda r: (r.name, r._type)):
        records.setdefault(record.name, []).append({"type": record._type, **_plain(record.data)})
    return ZoneDocument(zone.name, origin, None, records, list(route53_sets))


def _plain(data: Any) -> Any:
    """octoDNS's record data (its own dict and value classes) as plain JSON values."""
    return json.loads(json.dumps(data, default=str))


def record_from(zone, name: str, data: dict[str, Any]):
    from octodns.record import Record  # octoDNS and boto3 load only when a zone is in Route53 or octoDNS's form
    return Record.new(zone, name, data, lenient=True)


# -- Route53 ------------------------------------------------------------------------------------
def route53_client(aws: Aws):
    import boto3
    from botocore.config import Config

    config = Config(retries={"mode": "standard", "max_attempts": aws.max_attempts})
    return boto3.session.Session(region_name=aws.region or "us-east-1").client(
        "route53", endpoint_url=aws.endpoint_url, config=config)


def route53_provider(client, zone: str, zone_id: str, private: bool | None = None):
    from octodns_route53 import Route53Provider

    provider = Route53Provider("dr", private=private, strict_supports=False)
    provider._conn = client  # dr's client: its endpoint, region and retry policy
    provider._r53_zones = {zone: zone_id}  # pinned: zones that share a name are no longer ambiguous
    return provider


def route53_zone_id(client, spec: Zone) -> str:
    if spec.route53.hosted_zone_id:
        return spec.route53.hosted_zone_id
    found = [z for z in client.list_hosted_zones_by_name(DNSName=spec.zone)["HostedZones"]
             if z["Name"].lower() == spec.zone and (spec.route53.private is None
                                                    or z.get("Config", {}).get("PrivateZone", False) == spec.route53.private)]
    if len(found) != 1:
        what = "no hosted zone" if not found else f"{len(found)} hosted zones ({', '.join(z['Id'] for z in found)})"
        raise ZoneUnreadable(f"{what} named {spec.zone}: set route53.hosted_zone_id (or route53.private)")
    return found[0]["Id"]


def route53_sets(client, zone_id: str) -> list[dict[str, Any]]:
    """Every record set of the zone, in the API's order."""
    sets = []
    for page in client.get_paginator("list_resource_record_sets").paginate(HostedZoneId=zone_id):
        sets += page["ResourceRecordSets"]
    return sets


def route53_token(sets: list[dict[str, Any]]) -> str:
    digest = hashlib.sha256(json.dumps(sets, sort_keys=True, default=str).encode()).hexdigest()
    return f"route53:{len(sets)}:{digest}"


def read_route53(client, spec: Zone, zone_id: str, sets: list[dict[str, Any]]) -> ZoneDocument:
    from octodns.zone import Zone as OctoZone

    zone = OctoZone(spec.zone, [])
    route53_provider(client, spec.zone, zone_id, spec.route53.private).populate(zone, lenient=True)
    routed = [s for s in sets if "SetIdentifier" in s]
    for name, kind in {(s["Name"], s["Type"]) for s in routed}:  # octoDNS kept one of them as a plain record
        host = zone.hostname_from_fqdn(name.lower())
        for record in [r for r in zone.records if r.name == host and r._type == kind]:
            zone.remove_record(record)
    return _document(zone, f"route53:{zone_id}", route53_sets=routed)
