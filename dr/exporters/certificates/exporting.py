"""A backup of the certificates source: read every region, judge expiry, write the artifacts.

Every certificate is read first (DescribeCertificate, GetCertificate, its bytes parsed), so that
which certificate stands in for which (covering.py) is known before anything is written. A
region that cannot be listed is an error finding and the others still land; when none can be,
the source fails.
"""

from __future__ import annotations

import hashlib
import io
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

from dr.exporters.certificates import acm
from dr.exporters.certificates.covering import stand_ins
from dr.exporters.certificates.parsing import CertificateUnreadable, LeafFacts, leaf
from dr.exporters.certificates.records import expiry_findings, exportability, identity, record, render
from dr.contract import ArtifactSink, ExportContext, FindingCode
from dr.model.artifacts import Dependency, Sensitivity

CERT, KEY = "acm-certificate", "acm-private-key"
KEY_SUFFIX = ":key"
DEPENDENCY = "acm-certificate"  # an in-use certificate's dependency on its own ARN (placed by region)
#: the audit's finding when an in-use certificate exists only in a lost region (Exporter.finding_codes)
CERTIFICATE_LOST = FindingCode(
    "certificate-only-in-failed-region", "A certificate in use exists only in a region that is lost",
    "Get a certificate for the same domains in a surviving region before you need it: request one there "
    "(DNS validation, the same records validate it), import it, or back up an exportable certificate's "
    "key (export_private: true); then back up and audit again.")


@dataclass
class Read:
    """One certificate as read from ACM."""

    acm: Any  # the region's client (for the private key, read only when needed)
    described: dict[str, Any]
    record: dict[str, Any]
    facts: LeafFacts | None


def keyed(described: dict[str, Any], export_private: bool) -> bool:
    """Whether the backup holds this certificate's private key (a KEY artifact)."""
    return export_private and described.get("Status") == "ISSUED" and exportability(described)[0]


class ExportRun:
    def __init__(self, context: ExportContext, sink: ArtifactSink):
        self.context, self.sink, self.options = context, sink, context.options
        self.now = datetime.now(timezone.utc)
        rto = context.rto or timedelta(0)
        self.window = rto + timedelta(days=self.options.expiry_margin_days)
        self.window_text = (f"the source's rto ({rto}) plus expiry_margin_days ({self.options.expiry_margin_days})"
                            if rto else f"expiry_margin_days ({self.options.expiry_margin_days}; the source "
                            "sets no rto)")

    def execute(self) -> None:
        found = self._read_regions()
        provides = stand_ins([r.record for r in found], self.now)
        keys = 0
        for read in found:
            self._write_certificate(read, provides.get(read.record["arn"], []))
            keys += self._write_key(read)
        left = sum(1 for r in found if self.options.export_private and not r.record["exportable"])
        self.context.log(f"acm: {len(found)} certificates in {', '.join(self.options.regions)}"
                         + (f"; {keys} private keys exported, {left} certificates not exportable (imported or "
                            "Amazon-issued: their keys never leave ACM)" if self.options.export_private else ""))

    def _read_regions(self) -> list[Read]:
        found, failed = [], []
        for region in self.options.regions:
            try:
                client = acm.client(self.options, region)
                for arn, described in acm.certificates(client):
                    read = self._read_one(client, arn, described)
                    if read is not None:
                        found.append(read)
            except acm.AcmUnavailable as exc:
                failed.append(region)
                self.context.finding("error", "acm-region-unreadable", f"ACM in {region}: {exc}", region=region,
                                     object=region, action="check the credentials' acm:ListCertificates and "
                                     "acm:DescribeCertificate permissions and the endpoint, then back up again")
        if failed and len(failed) == len(self.options.regions):
            raise acm.AcmUnavailable(f"no region could be read ({', '.join(failed)}): see the findings")
        return found

    def _read_one(self, client, arn: str, described: dict[str, Any]) -> Read | None:
        try:
            certificate, chain = acm.pem(client, arn)
            facts = leaf(certificate) if certificate else None
        except (acm.AcmUnavailable, CertificateUnreadable) as exc:
            if described.get("Status") == "ISSUED":
                self.context.finding("error", "acm-certificate-unreadable", f"{arn}: {exc}", object=arn)
                return None
            certificate, chain, facts = "", "", None  # not issued (pending, failed): nothing to read yet
        found = record(arn, described, certificate, chain, facts)
        for f in expiry_findings(found, facts, described, self.now, self.window, self.window_text):
            self.context.finding(f.severity, f.code, f.message, object=arn, action=f.action,
                                 not_after=found.get("not_after"), in_use_by=found["in_use_by"])
        return Read(client, described, found, facts)

    def _write_certificate(self, read: Read, stands_in_for: list[str]) -> None:
        found = read.record
        content = render(found)
        deps = [Dependency(DEPENDENCY, found["arn"], f"in use by {', '.join(found['in_use_by'])}; domains "
                           f"{', '.join(found['domains'])}")] if found["in_use_by"] else []
        meta = {"arn": found["arn"], "region": found["region"], "type": found["type"], "status": found["status"],
                "domains": found["domains"], "in_use": bool(found["in_use_by"]), "not_after": found.get("not_after"),
                "exportable": found["exportable"]}
        if stands_in_for:
            meta["provides"] = stands_in_for
        self.sink.write(CERT, identity(found["arn"]), content,
                        sensitivity=self.context.sensitivity or Sensitivity.INTERNAL, dependencies=deps, meta=meta,
                        change_token="sha256:" + hashlib.sha256(content).hexdigest())

    def _write_key(self, read: Read) -> int:
        if not keyed(read.described, self.options.export_private) or read.facts is None:
            return 0
        arn = read.record["arn"]
        try:
            self.sink.write(KEY, identity(arn) + KEY_SUFFIX, lambda: io.BytesIO(acm.export_private(read.acm, arn)),
                            sensitivity=Sensitivity.SECRET, meta={"arn": arn, "region": read.record["region"],
                                                                  "provides": [arn]},
                            change_token=f"sha256:{read.facts.sha256}")
        except (acm.AcmUnavailable, CertificateUnreadable) as exc:
            self.context.finding("error", "acm-private-key-unexported", f"{arn}: {exc}", object=arn,
                                 action="check the acm:ExportCertificate permission, then back up again")
            return 0
        return 1
