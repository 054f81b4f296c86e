"""The CertificatesExporter class: discover, export, restore, and its v2 declarations.

Per certificate of every listed region:
  acm-certificate / <region>/<id>      its record (records.py), JSON: the facts, the PEM and chain;
        change token: the record's sha256; an in-use certificate depends on its own ARN
        (`acm-certificate`, placed by region), and `provides` the ARNs it can stand in for
        (covering.py);
  acm-private-key / <region>/<id>:key  with `export_private`, for exportable certificates: the
        private key, secret-class; change token: the certificate's sha256 (ExportCertificate is
        called only when the certificate changed); `provides` its own ARN.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Iterator

from dr.exporters.certificates import acm
from dr.exporters.certificates.deploying import run_needs
from dr.exporters.certificates.exporting import CERT, CERTIFICATE_LOST, DEPENDENCY, KEY, KEY_SUFFIX, ExportRun, keyed
from dr.exporters.certificates.options import CertificatesOptions
from dr.exporters.certificates.records import domains, identity
from dr.exporters.certificates.restoring import KEY_DIR, CertificateRestore
from dr.contract import (ArtifactSink, AuditDeclarations, ContentReader, DeployNeeds, Destination, Discovered,
                         DrillComparison, Exporter, Ordering, OrderingRule, Outcome, OutcomeStatus, Planning,
                         RestoreOption, RestoreRequest, RestoredContent, Rewriter, RunNeeds)
from dr.model.artifacts import Artifact


class CertificatesExporter(Exporter, Planning, AuditDeclarations, DeployNeeds, DrillComparison):
    type_name = "certificates"
    summary = "ACM certificates: domains, expiry from their bytes, in-use-by, exportability; keys optional and secret"
    contract_version = 2
    Options = CertificatesOptions
    # an in-use certificate's dependency on its own ARN records where it came from: a restore
    # imports into another region, it does not read the lost one
    origin_kinds = frozenset({DEPENDENCY})
    finding_codes = (CERTIFICATE_LOST,)
    lost_kind_codes = MappingProxyType({DEPENDENCY: CERTIFICATE_LOST.code})
    restore_options = (RestoreOption(KEY_DIR, "DIR", "private keys of imported certificates, as DIR/<certificate "
                                     "id>.pem (ACM never gives them back)", KEY_DIR),)
    ordering = Ordering(frozenset({"certificates"}), (OrderingRule(
        "role:certificates", "role:dns-cutover",
        "names move to the recovery region only once its load balancers can hold their certificates: "
        "clients sent there earlier fail TLS"),))

    def destinations(self, artifacts: list[Artifact], rewrite: Rewriter) -> list[Destination]:
        """One import per region, back where its certificates came from; each writes to that
        region (an ARN of it, placed by the plan as the audit places certificates), so a restore
        in place into a lost region is refused, used or not."""
        by_region: dict[str, list[Artifact]] = {}
        for artifact in artifacts:
            by_region.setdefault(str(artifact.meta.get("region") or ""), []).append(artifact)
        return [Destination(group, None, "each certificate's own region (--to REGION for another)",
                            f"-> {region}" if region and len(by_region) > 1 else "",
                            writes_to=tuple(sorted({str(a.meta["arn"]) for a in group if a.meta.get("arn")})[:1]))
                for region, group in by_region.items()]

    def scratch_destination(self, folder: str) -> str | None:
        return None  # a folder is not ACM: a drill names a region with --to

    def run_needs(self) -> RunNeeds:
        return run_needs(self.options)

    # -- discover / export ---------------------------------------------------------------------
    def discover(self) -> Iterator[Discovered]:
        for region in self.options.regions:
            for arn, described in acm.certificates(acm.client(self.options, region)):
                yield Discovered(CERT, identity(arn), f"{described.get('Type')} {described.get('Status')} "
                                 f"{', '.join(domains(described))}")
                if keyed(described, self.options.export_private):
                    yield Discovered(KEY, identity(arn) + KEY_SUFFIX)

    def export(self, sink: ArtifactSink) -> None:
        ExportRun(self.context, sink).execute()

    # -- restore ---------------------------------------------------------------------------------
    def restore(self, artifacts: list[Artifact], reader: ContentReader,
                request: RestoreRequest) -> Iterator[Outcome]:
        """One outcome per certificate; a private key is restored with its certificate."""
        keys = {a.identity[: -len(KEY_SUFFIX)]: a for a in artifacts if a.kind == KEY}
        certificates = {a.identity for a in artifacts if a.kind == CERT}
        clients: dict = {}
        for artifact in artifacts:
            if artifact.kind == CERT:
                yield CertificateRestore(self.options, artifact, keys.get(artifact.identity), reader, request,
                                         clients).outcome()
            elif artifact.kind == KEY and artifact.identity[: -len(KEY_SUFFIX)] not in certificates:
                yield Outcome(artifact.identity, OutcomeStatus.SKIPPED, "a private key without its certificate "
                              "in this restore: restore the certificate's artifact with it")
            elif artifact.kind not in (CERT, KEY):
                yield Outcome(artifact.identity, OutcomeStatus.SKIPPED, f"not a certificates artifact ({artifact.kind})")

    def restored_content(self, artifacts: list[Artifact], reader: ContentReader,
                         request: RestoreRequest) -> Iterator[RestoredContent]:
        """Each certificate restore() imports: the certificate the target region holds for its
        domains, read back, against the backed-up bytes (sha256 of the DER); not the keys."""
        keys = {a.identity[: -len(KEY_SUFFIX)]: a for a in artifacts if a.kind == KEY}
        clients: dict = {}
        for artifact in (a for a in artifacts if a.kind == CERT):
            found = CertificateRestore(self.options, artifact, keys.get(artifact.identity), reader, request,
                                       clients).fingerprints()
            if found is not None:
                yield RestoredContent(artifact.identity, restored=found[0], backed_up=found[1])
