"""One ACM certificate as a record: what DescribeCertificate says, checked against its own bytes.

The record (JSON, one artifact per certificate) keeps what a recovery needs to know and to
redo: ARN, region, type, status, domains, in-use-by, key algorithm, renewal eligibility,
whether the key can be exported, the validation records, and the certificate and chain as
PEM. Validity (`not_before`, `not_after`) is read from the PEM; DescribeCertificate's own
dates are kept beside it (`described`), and the two disagreeing is a finding.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

from dr.exporters.certificates.parsing import LeafFacts

# How far DescribeCertificate's dates may differ from the certificate's before it is a finding:
# the API rounds to the second.
TOLERANCE = timedelta(seconds=1)


def region_of(arn: str) -> str:
    parts = arn.split(":")
    return parts[3] if len(parts) > 3 else ""


def certificate_id(arn: str) -> str:
    return arn.rsplit("/", 1)[-1]


def identity(arn: str) -> str:
    """`<region>/<certificate id>`: unique within a source, readable in listings."""
    return f"{region_of(arn)}/{certificate_id(arn)}"


def domains(described: dict[str, Any]) -> list[str]:
    names = [described.get("DomainName") or "", *(described.get("SubjectAlternativeNames") or [])]
    return sorted({n.lower() for n in names if n})


def exportability(described: dict[str, Any]) -> tuple[bool, str]:
    """Whether ExportCertificate gives the private key, and why (ACM's rules)."""
    kind = described.get("Type", "")
    if kind == "PRIVATE":
        return True, "a private CA's certificate: ExportCertificate gives its key"
    if (described.get("Options") or {}).get("Export") == "ENABLED":
        return True, "created exportable (Options.Export ENABLED): ExportCertificate gives its key"
    if kind == "IMPORTED":
        return False, "imported: ACM never gives an imported certificate's private key back"
    return False, "Amazon-issued and not created exportable: its private key never leaves ACM"


def _iso(value: Any) -> str | None:
    if isinstance(value, datetime):
        return value.astimezone(timezone.utc).isoformat()
    return None if value is None else str(value)


def record(arn: str, described: dict[str, Any], certificate: str, chain: str,
           facts: LeafFacts | None) -> dict[str, Any]:
    exportable, why = exportability(described)
    found = {
        "arn": arn, "region": region_of(arn), "type": described.get("Type"), "status": described.get("Status"),
        "domain_name": described.get("DomainName"), "domains": domains(described),
        "in_use_by": sorted(described.get("InUseBy") or []), "key_algorithm": described.get("KeyAlgorithm"),
        "renewal_eligibility": described.get("RenewalEligibility"), "exportable": exportable,
        "exportable_why": why, "issuer": described.get("Issuer"), "subject": described.get("Subject"),
        "managed_by": described.get("ManagedBy"), "certificate_authority": described.get("CertificateAuthorityArn"),
        "described": {"not_before": _iso(described.get("NotBefore")), "not_after": _iso(described.get("NotAfter"))},
        "validation": [{"domain": v.get("DomainName"), "method": v.get("ValidationMethod"),
                        "record": v.get("ResourceRecord")} for v in described.get("DomainValidationOptions") or []],
        "certificate": certificate, "certificate_chain": chain,
    }
    if facts is not None:
        found.update(not_before=facts.not_before.isoformat(), not_after=facts.not_after.isoformat(),
                     serial=facts.serial, sha256=facts.sha256, names=list(facts.names))
    return found


def render(found: dict[str, Any]) -> bytes:
    return json.dumps(found, sort_keys=True, indent=1).encode() + b"\n"


# -- findings: expiry and disagreement, judged from the bytes ------------------------------------
@dataclass(frozen=True)
class ExpiryFinding:
    severity: str
    code: str
    message: str
    action: str


def expiry_findings(found: dict[str, Any], facts: LeafFacts | None, described: dict[str, Any], now: datetime,
                    window: timedelta, window_text: str) -> list[ExpiryFinding]:
    if facts is None:
        return []
    name = f"{found['arn']} ({', '.join(found['domains']) or 'no domain'})"
    used = bool(found["in_use_by"])
    out = _mismatch(name, facts, described)
    if facts.not_after <= now:
        out.append(ExpiryFinding(
            "error" if used else "warning", "acm-certificate-expired",
            f"{name} expired {facts.not_after.isoformat()} (from the certificate's bytes)"
            + (f" and is in use by {', '.join(found['in_use_by'])}: clients fail TLS now" if used
               else "; it is in use by nothing"),
            "renew or re-import it now" if used else "delete it, or renew it if something will use it"))
    elif facts.not_after <= now + window:
        out.append(ExpiryFinding(
            "warning", "acm-certificate-expiring",
            f"{name} expires {facts.not_after.isoformat()}, within {window_text}: a recovery that takes "
            "the RTO would start with a certificate about to expire",
            "renew it (Amazon-issued: check its DNS validation records; imported: re-import a new one)"))
    return out


def _mismatch(name: str, facts: LeafFacts, described: dict[str, Any]) -> list[ExpiryFinding]:
    out = []
    for field, own in (("NotAfter", facts.not_after), ("NotBefore", facts.not_before)):
        said = described.get(field)
        if isinstance(said, datetime) and abs(said - own) > TOLERANCE:
            out.append(ExpiryFinding(
                "warning", "acm-certificate-dates-disagree",
                f"{name}: DescribeCertificate says {field} {said.isoformat()}, the certificate's bytes say "
                f"{own.isoformat()}; dr judges expiry from the bytes",
                "compare the certificate ACM serves with the one you meant to import; re-import if it is stale"))
    return out
