"""The `dns` exporter: the names that send clients to a platform, and the cutover a recovery ends with.

Where it sits: dr.backup calls export() with a sink; dr.restore calls restore() with a reader.
  options    the plan's options             reading    AXFR + SOA serial, Route53 (octoDNS + boto3)
  records    the zone document, targets     transfer   one streamed AXFR (wire.py's reader, or dnspython)
  exporter   the contract's class           writing    restore: Route53 through octoDNS's provider
  wire       AXFR messages to rdata text    rfc2136    restore: batched, pipelined RFC 2136 updates
                                            update_wire  rdata text to UPDATE messages (bytes)

octoDNS (octodns, octodns-route53) is the provider layer for Route53: its source reads zones, its
record model validates them, its provider diffs and writes them. AXFR and RFC 2136 are dr's own
wire code, with dnspython for TSIG and uncommon types (octoDNS's AXFR source and RFC 2136 provider
were 74x `dig` and 22x `nsupdate` on 50,000 records); octoDNS records are built from those zones only for a Route53 restore.
One artifact per zone (kind `dns-zone`, records.py documents its form). The change token is the SOA serial (AXFR) or Route53's record-set count and a
hash. Every record's target is a `dns-target` dependency, with the record and its TTL, placed
by the plan like any reference: a record pointing into the failed domain is what the cutover
map (`record-target` remaps, `--remap-target OLD=NEW`) must change. In a whole-plan restore the
cutover comes last, after the workloads it points at.
"""

from dr.exporters.dns.exporter import DnsExporter

__all__ = ["DnsExporter"]
