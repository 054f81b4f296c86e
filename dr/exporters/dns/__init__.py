"""The `dns` exporter: the names that send clients to a platform, and the cutover a recovery ends with.

Where it sits: dr.backup calls export() with a sink; dr.restore calls restore() with a reader.
  options    the plan's options             reading   octoDNS sources + SOA serial, Route53 sets
  records    the zone document, targets     writing   octoDNS providers: plan per record, apply
  exporter   the contract's class

Built on octoDNS (octodns, octodns-bind, octodns-route53) as the provider layer: its sources
read zones, its record model validates them, its providers diff and write them. One artifact
per zone (kind `dns-zone`), holding octoDNS's own zone form plus what octoDNS does not keep
(records.py). The change token is the SOA serial (AXFR) or Route53's record-set count and a
hash. Every record's target is a `dns-target` dependency, with the record and its TTL, placed
by the plan like any reference: a record pointing into the failed domain is what the cutover
map (`record-target` remaps, `--remap-target OLD=NEW`) must change. In a whole-plan restore the
cutover comes last, after the workloads it points at.
"""

from dr.exporters.dns.exporter import DnsExporter

__all__ = ["DnsExporter"]
