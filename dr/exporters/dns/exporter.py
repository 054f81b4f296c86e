"""The DnsExporter class: the contract's methods, wired to reading, records and writing."""

from __future__ import annotations

from typing import Iterator

from dr.contract import (ArtifactSink, ContentReader, DeployNeeds, Destination, Discovered, DrillComparison, Exporter,
                         Ordering, OrderingRule, Outcome, OutcomeStatus, Planning, RemapKind, RestoreOption,
                         RestoreRequest, RestoredContent, Rewriter, RtoEstimates, RunNeeds, Sizing)
from dr.exporters.dns import reading, writing
from dr.exporters.dns.deploying import run_needs
from dr.exporters.dns.options import DnsOptions, Zone
from dr.exporters.dns.records import (ALIAS_TTL, ZoneDocument, fqdn, route53_set_targets,
                                      row_targets, same_target, targets)
from dr.model.artifacts import Artifact, Dependency, Sensitivity

KIND = "dns-zone"
TARGET = "dns-target"  # the dependency of a record on what it points at (an address or a host)
CUTOVER = "record-target:"  # RestoreRequest.remap prefix of the cutover map


def _target_rewrite(reference: str, old: str, new: str) -> str | None:
    """A record target is one address or host: remapped only when it is exactly `old`."""
    return new if same_target(reference, old) else None


class DnsExporter(Exporter, Planning, DeployNeeds, RtoEstimates, DrillComparison):
    type_name = "dns"
    summary = "DNS zones (Route53 and any server that allows AXFR) through octoDNS: records, targets, TTLs, cutover"
    Options = DnsOptions
    contract_version = 2
    sizing = Sizing(97, "DNS zone export and replay, export of 50,000 records")
    remap_kinds = (RemapKind("record-target", frozenset({TARGET}),
                             "old: an address or host name records point at (in the failed domain); new: the "
                             "recovery cluster's address or host that replaces it", request_prefix=CUTOVER,
                             rewrite=_target_rewrite),)
    restore_options = (RestoreOption("remap-target", "OLD=NEW", "cutover map: records pointing at OLD point at NEW "
                                     "(repeat it)", CUTOVER, pairs=True),)
    ordering = Ordering(frozenset({"dns-cutover"}), (OrderingRule(
        "@workloads", "role:dns-cutover",
        "DNS cutover is the last step: names move to the recovery cluster only once its workloads "
        "are restored and ready, else clients are sent to something that does not answer (and "
        "resolvers cache that for the TTL)", requires=True),))

    # -- where a restore goes by default: back where each zone came from ----------------------
    def restore_wait(self, artifacts: list[Artifact]) -> tuple[float, str] | None:
        """Resolvers keep the old answers up to the largest TTL: the RTO's floor for clients."""
        zones = [(int(a.meta.get("max_ttl") or 0), a.meta.get("zone") or a.identity) for a in artifacts]
        ttl, zone = max(zones, default=(0, ""))
        return (float(ttl), f"zone {zone}: resolvers may keep old answers for its largest TTL, {ttl} s") \
            if ttl else None

    def run_needs(self) -> RunNeeds:
        return run_needs(self.options, self.context.base_dir, self.context.source)

    def destinations(self, artifacts: list[Artifact], rewrite: Rewriter) -> list[Destination]:
        groups: dict[str, Destination] = {}
        for artifact in artifacts:
            origin = artifact.meta.get("origin", "")
            groups.setdefault(origin, Destination([], origin, "the zone it came from", f"-> {origin}")
                              ).artifacts.append(artifact)
        return list(groups.values())

    def scratch_destination(self, folder: str) -> str | None:
        return None  # a folder is not a DNS server: a drill names a scratch zone with --to

    # -- discover / export ------------------------------------------------------------------
    def _identity(self, spec: Zone) -> str:
        zone = spec.zone.rstrip(".")
        return f"route53/{zone}" if spec.route53 else zone

    def _secret(self, spec: Zone) -> str | None:
        return spec.axfr.tsig.secret(self.context.base_dir) if spec.axfr and spec.axfr.tsig else None

    def discover(self) -> Iterator[Discovered]:
        for spec in self.options.zones:
            try:
                token, _ = self._token(spec)
                yield Discovered(KIND, self._identity(spec), token)
            except Exception as exc:  # discovery reports, it never fails the audit
                yield Discovered(KIND, self._identity(spec), f"unreadable: {type(exc).__name__}: {exc}")

    def _token(self, spec: Zone):
        """(change token, a function reading the zone document)."""
        if spec.axfr:
            server = reading.axfr_server(spec, self._secret(spec), self.options.timeout_seconds)
            serial = reading.soa_serial(server, spec.zone)
            return f"soa:{serial}", lambda: reading.read_axfr(server, spec, serial, self.options.transfer_attempts)
        client = reading.route53_client(self.options.aws)
        zone_id = reading.route53_zone_id(client, spec)
        sets = reading.route53_sets(client, zone_id)
        return reading.route53_token(sets), lambda: reading.read_route53(client, spec, zone_id, sets)

    def export(self, sink: ArtifactSink) -> None:
        """One artifact per zone; a zone that cannot be read is an error finding, the others still land."""
        for spec in self.options.zones:
            try:
                self._export_one(sink, spec)
            except Exception as exc:
                self.context.finding("error", "dns-zone-unreadable", f"{spec.zone}: {type(exc).__name__}: {exc}",
                                     zone=spec.zone)

    def _export_one(self, sink: ArtifactSink, spec: Zone) -> None:
        token, read = self._token(spec)
        doc = read()  # small (a 50,000-record zone is a few MB); read now: its targets are the dependencies
        meta = {"zone": doc.zone, "origin": doc.origin, "serial": doc.serial, "records": doc.count(),
                "max_ttl": _max_ttl(doc), "unmodelled_types": doc.unmodelled_types()}
        self.context.log(f"dns {doc.zone}: {doc.count()} records from {doc.origin}, largest TTL {meta['max_ttl']} s")
        sink.write(KIND, self._identity(spec), doc.to_bytes(),
                   sensitivity=self.context.sensitivity or Sensitivity.INTERNAL,
                   dependencies=_dependencies(doc), meta=meta, change_token=token)

    # -- restore ------------------------------------------------------------------------------
    def restore(self, artifacts: list[Artifact], reader: ContentReader,
                request: RestoreRequest) -> Iterator[Outcome]:
        cutover = {k[len(CUTOVER):]: v for k, v in request.remap.items() if k.startswith(CUTOVER)}
        for artifact in artifacts:
            if artifact.kind != KIND:
                yield Outcome(artifact.identity, OutcomeStatus.SKIPPED, f"not a {KIND} artifact ({artifact.kind})")
                continue
            to = request.to or artifact.meta.get("origin")
            doc = ZoneDocument.from_bytes(reader.read(artifact))
            try:
                dest = writing.parse(to, doc.zone, lambda: reading.route53_client(self.options.aws), self._tsig_for,
                                     self.options.timeout_seconds)
            except Exception as exc:
                yield Outcome(artifact.identity, OutcomeStatus.FAILED, f"destination {to}: {exc}")
                continue
            yield from writing.replay(doc, dest, cutover, request.dry_run, request.overwrite)

    def restored_content(self, artifacts: list[Artifact], reader: ContentReader,
                         request: RestoreRequest) -> Iterator[RestoredContent]:
        """Each zone: the destination's record sets read back (AXFR, or Route53 through octoDNS)
        and normalised, against the backup's with the cutover applied."""
        cutover = {k[len(CUTOVER):]: v for k, v in request.remap.items() if k.startswith(CUTOVER)}
        for artifact in artifacts:
            if artifact.kind != KIND:
                continue
            doc = ZoneDocument.from_bytes(reader.read(artifact))
            try:
                dest = writing.parse(request.to or artifact.meta.get("origin"), doc.zone,
                                     lambda: reading.route53_client(self.options.aws), self._tsig_for,
                                     self.options.timeout_seconds)
            except Exception:  # restore() failed the zone with this reason: nothing written to compare
                continue
            restored, backed_up = writing.restored_fingerprints(doc, dest, cutover)
            yield RestoredContent(artifact.identity, restored=restored, backed_up=backed_up)

    def _tsig_for(self, zone: str) -> writing.Tsig | None:
        """The plan's TSIG key of that zone, used to update it as to transfer it."""
        for spec in self.options.zones:
            if spec.zone == zone and spec.axfr and spec.axfr.tsig:
                tsig = spec.axfr.tsig
                return writing.Tsig(tsig.name, tsig.secret(self.context.base_dir), tsig.algorithm)
        return None


def _max_ttl(doc: ZoneDocument) -> int:
    """The largest TTL of a record that points somewhere: how long resolvers may keep the old answer
    after the cutover (the RTO's floor for clients that follow DNS)."""
    ttls = [d.get("ttl", 0) for name, datas in doc.records.items() for d in datas
            if d.get("ttl") != ALIAS_TTL and list(targets(name, d, doc.zone))]
    ttls += [s.get("TTL", 0) for s in doc.route53_sets]
    ttls += [row[2] for row in doc.rrsets if next(row_targets(row, doc.zone), None) is not None]
    return max(ttls, default=0)


def _dependencies(doc: ZoneDocument) -> list[Dependency]:
    """Every record's targets, each with the record and its TTL (the audit places the target).
    Collected as tuples and made Dependency objects once deduplicated (50,000 rows: frozen
    dataclasses built and hashed per row cost more than the rest of this function)."""
    deps: list[tuple[str, str, str]] = []
    for name, datas in sorted(doc.records.items()):
        for data in datas:
            ttl = "" if data.get("ttl") == ALIAS_TTL else f" ttl={data.get('ttl')}"
            for target in targets(name, data, doc.zone):
                deps.append((TARGET, target, f"{fqdn(name, doc.zone)} {data['type']}{ttl}"))
    for row in doc.rrsets:
        found = list(row_targets(row, doc.zone))
        if found:
            detail = f"{fqdn(row[0], doc.zone)} {row[1]} ttl={row[2]}"
            deps.extend((TARGET, target, detail) for target in found)
    for rrset in doc.route53_sets:
        for target in route53_set_targets(rrset):
            deps.append((TARGET, target, f"{rrset['Name']} {rrset['Type']} set={rrset['SetIdentifier']}"
                         f" ttl={rrset.get('TTL', '')}"))
            if "HealthCheckId" in rrset:
                deps.append(("route53-health-check", rrset["HealthCheckId"], rrset["Name"]))
    return [Dependency(*dep) for dep in dict.fromkeys(deps)]
