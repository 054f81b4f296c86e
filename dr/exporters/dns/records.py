"""The zone document an artifact holds, and what its records point at.

Where it sits: reading.py fills a ZoneDocument from a server; exporting records each record's
targets as dependencies; writing.py turns the document back into an octoDNS zone after the
cutover map rewrote its targets.

The document is JSON (one file per zone). Format "dr-dns-zone/2" (this version writes it):
  format        "dr-dns-zone/2"
  zone          the zone's name, with its trailing dot
  origin        where it was read: "dns://HOST:PORT/ZONE" or "route53:HOSTED_ZONE_ID"
  serial        the SOA serial the transfer carried (AXFR), else null
  rrsets        zones read by AXFR: every record set but the SOA, one row each, sorted:
                [relative name ("" for the apex), TYPE, ttl, [rdata in presentation form, names
                absolute]], exactly the fields of octoDNS's `Rrset` (and of `dig` output), of
                every type the server holds, modelled by octoDNS or not
  records       zones read from Route53: octoDNS's own zone form, {relative name: [record data,
                ...]}, what `octodns-dump` writes and octoDNS's YamlProvider reads
  route53_sets  Route53 record sets with a routing policy (weighted, latency, failover,
                geolocation, multivalue: those with a SetIdentifier), verbatim from the API,
                health-check ids included. octoDNS's Route53 source keeps only the first set of
                a name and type that it did not create itself, so dr keeps these itself.
Format "dr-dns-zone/1" (written before) is still read: AXFR zones were in `records` (octoDNS's
form) plus `unmodelled`, the types octoDNS has no model for: {name, type, ttl, values: [rdata]}.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Iterator

FORMAT = "dr-dns-zone/2"
READABLE = ("dr-dns-zone/1", FORMAT)
#: record types whose values name another host (the value itself, or a field of it)
_HOST_FIELDS = {"CNAME": None, "ALIAS": None, "DNAME": None, "PTR": None, "NS": None, "MX": "exchange",
                "SRV": "target", "Route53Provider/ALIAS": "name"}
_ADDRESS_TYPES = {"A", "AAAA"}
#: the types octoDNS reads and writes over AXFR and RFC 2136 (octodns_bind's SUPPORTS, checked by a
#: test); the others are an artifact's `unmodelled_types`: only dnspython writes them back
OCTODNS_RFC2136_TYPES = frozenset({"A", "AAAA", "CAA", "CNAME", "DS", "HTTPS", "LOC", "MX", "NAPTR", "NS", "PTR",
                                   "SPF", "SRV", "SSHFP", "SVCB", "TLSA", "TXT"})
#: Route53 aliases have no TTL: octoDNS's Route53 source gives them this stand-in
ALIAS_TTL = 942942942


@dataclass
class ZoneDocument:
    zone: str
    origin: str
    serial: int | None = None
    records: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    route53_sets: list[dict[str, Any]] = field(default_factory=list)
    unmodelled: list[dict[str, Any]] = field(default_factory=list)  # format 1 only
    rrsets: list[list] = field(default_factory=list)

    def to_bytes(self) -> bytes:
        """The header indented, then one rrset row per line (json's C encoder: a 50,000-record zone
        is ~0.1 s; `indent` would take the pure-Python encoder and several seconds)."""
        head = json.dumps({"format": FORMAT, "zone": self.zone, "origin": self.origin, "serial": self.serial,
                           "records": self.records, "route53_sets": self.route53_sets}, sort_keys=True, indent=1)
        rows = ",\n  ".join(map(json.dumps, self.rrsets))
        return f'{head[:-2]},\n "rrsets": [\n  {rows}\n ]\n}}'.encode() if self.rrsets else head.encode()

    @classmethod
    def from_bytes(cls, data: bytes) -> "ZoneDocument":
        doc = json.loads(data)
        if doc.get("format") not in READABLE:
            raise ValueError(f"not a dr-dns-zone document this version reads ({', '.join(READABLE)}): "
                             f"format {doc.get('format')!r}")
        return cls(doc["zone"], doc["origin"], doc.get("serial"), doc.get("records", {}),
                   doc.get("route53_sets", []), doc.get("unmodelled", []), doc.get("rrsets", []))

    def count(self) -> int:
        return (sum(len(v) for v in self.records.values()) + len(self.route53_sets) + len(self.unmodelled)
                + sum(len(row[3]) for row in self.rrsets))

    def unmodelled_types(self) -> list[str]:
        """The record types read by AXFR that octoDNS does not read or write (only dnspython writes them)."""
        return sorted({row[1] for row in self.rrsets} - OCTODNS_RFC2136_TYPES | {r["type"] for r in self.unmodelled})


def item_names(doc: "ZoneDocument", zone: str | None = None) -> set[str]:
    """The Outcome.item of every record a restore of `doc` into `zone` reports (writing.py names them so)."""
    zone = zone or doc.zone
    names = {f"{fqdn(name, zone)} {data['type']}" for name, datas in doc.records.items() for data in datas}
    names |= {f"{fqdn(r['name'], zone)} {r['type']}" for r in doc.unmodelled}
    names |= {f"{fqdn(row[0], zone)} {row[1]}" for row in doc.rrsets}
    for rrset in doc.route53_sets:
        name = rrset["Name"].lower()
        name = name[: -len(doc.zone)] + zone if name.endswith(doc.zone) else name
        names.add(f"{name} {rrset['Type']} set={rrset['SetIdentifier']}")
    return names


def fqdn(name: str, zone: str) -> str:
    return f"{name}.{zone}" if name else zone


def _values(data: dict[str, Any]) -> list[Any]:
    return list(data["values"]) if "values" in data else [data["value"]] if "value" in data else []


def _host(value: str, zone: str) -> str:
    """An absolute host name without its trailing dot (a relative one is made absolute)."""
    value = value.strip()
    if not value.endswith(".") and value:
        value = f"{value}.{zone}"  # octoDNS keeps Route53 in-zone alias targets relative
    return value.rstrip(".").lower() if value else zone.rstrip(".")


def targets(name: str, data: dict[str, Any], zone: str) -> Iterator[str]:
    """What one record points at: addresses (A/AAAA) and hosts (CNAME, ALIAS, MX, SRV, NS, PTR)."""
    kind = data["type"]
    if kind in _ADDRESS_TYPES:
        yield from (str(v) for v in _values(data))
    elif kind in _HOST_FIELDS and not (kind == "NS" and name == ""):  # the zone's own servers are not a target
        key = _HOST_FIELDS[kind]
        for value in _values(data):
            yield _host(value[key] if key else value, zone)


#: the field of an rdata's presentation form that names a host
_ROW_HOST_FIELD = {"CNAME": 0, "DNAME": 0, "PTR": 0, "NS": 0, "MX": 1, "SRV": 3}


def row_targets(row: list, zone: str) -> Iterator[str]:
    """What one rrset row points at: addresses (A/AAAA) and hosts (CNAME, DNAME, MX, SRV, NS, PTR)."""
    name, kind, _, rdatas = row
    if kind in _ADDRESS_TYPES:
        yield from rdatas
    elif kind in _ROW_HOST_FIELD and not (kind == "NS" and name == ""):  # the zone's own servers are not a target
        index = _ROW_HOST_FIELD[kind]
        for text in rdatas:
            fields = text.split()
            if len(fields) > index:
                yield _host(fields[index], zone)


def rewrite_row(row: list, cutover: dict[str, str], zone: str) -> list:
    """A copy of one rrset row with every target in `cutover` (old -> new) replaced."""
    kind = row[1]
    if not cutover or (kind not in _ADDRESS_TYPES and kind not in _ROW_HOST_FIELD):
        return row
    index = _ROW_HOST_FIELD.get(kind, 0)

    def one(text: str) -> str:
        fields = text.split(" ")
        if len(fields) > index:
            fields[index] = _swap(fields[index], cutover, zone)
        return " ".join(fields)
    return [row[0], kind, row[2], [one(t) for t in row[3]]]


def route53_set_targets(rrset: dict[str, Any]) -> Iterator[str]:
    if "AliasTarget" in rrset:
        yield rrset["AliasTarget"]["DNSName"].rstrip(".").lower()
        return
    for rr in rrset.get("ResourceRecords", []):
        value = rr["Value"]
        if rrset["Type"] in _ADDRESS_TYPES:
            yield value
        elif rrset["Type"] in ("CNAME", "PTR", "NS"):
            yield value.rstrip(".").lower()
        elif rrset["Type"] in ("MX", "SRV"):
            yield value.split()[-1].rstrip(".").lower()


def same_target(reference: str, old: str) -> bool:
    return reference.strip().rstrip(".").lower() == old.strip().rstrip(".").lower()


def _swap(value: str, cutover: dict[str, str], zone: str) -> str:
    for old, new in cutover.items():
        if same_target(value, old) or (not value.endswith(".") and value and same_target(f"{value}.{zone}", old)):
            return new.rstrip(".") + "." if value.endswith(".") or not _is_address(new) else new
    return value


def _is_address(text: str) -> bool:
    import ipaddress
    try:
        ipaddress.ip_address(text)
        return True
    except ValueError:
        return False


def rewrite(data: dict[str, Any], cutover: dict[str, str], zone: str) -> dict[str, Any]:
    """A copy of one record's data with every target in `cutover` (old -> new) replaced."""
    kind = data["type"]
    if not cutover or (kind not in _ADDRESS_TYPES and kind not in _HOST_FIELDS):
        return data
    key = _HOST_FIELDS.get(kind)

    def one(value):
        if key:
            return {**value, key: _swap(value[key], cutover, zone)}
        return _swap(str(value), cutover, zone)

    out = dict(data)
    if "values" in data:
        out["values"] = [one(v) for v in data["values"]]
    elif "value" in data:
        out["value"] = one(data["value"])
    return out


def rewrite_route53_set(rrset: dict[str, Any], cutover: dict[str, str]) -> dict[str, Any]:
    out = json.loads(json.dumps(rrset))
    if "AliasTarget" in out:
        out["AliasTarget"]["DNSName"] = _swap(out["AliasTarget"]["DNSName"], cutover, "")
        return out
    for rr in out.get("ResourceRecords", []):
        parts = rr["Value"].split()
        parts[-1] = _swap(parts[-1], cutover, "")
        rr["Value"] = " ".join(parts)
    return out
