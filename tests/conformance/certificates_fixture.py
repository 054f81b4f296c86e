"""The certificates exporter's ConformanceFixture: moto's ACM over HTTP (its own server), two private-CA
certificates with their keys backed up (`export_private`) and one imported certificate (no key: its
restore says skipped); each destination is another region of the same server."""

from __future__ import annotations

from typing import Any, Hashable

from dr.exporters.certificates import CertificatesExporter
from dr.exporters.certificates.parsing import leaf
from dr.exporters.certificates.records import domains, identity
from tests.certificates.conftest import acm_client, import_leaf, make_leaf
from tests.conformance.builtin_fixtures import MotoFixture

CA = "arn:aws:acm-pca:us-east-1:123456789012:certificate-authority/conformance"


class CertificatesFixture(MotoFixture):
    exporter = CertificatesExporter

    def build_source(self, workdir: str) -> None:
        self.start_moto()
        acm = acm_client(self.endpoint, "us-east-1")
        for name in ("api.internal.example.com", "models.internal.example.com"):
            acm.request_certificate(DomainName=name, CertificateAuthorityArn=CA)
        import_leaf(self.endpoint, "us-east-1", make_leaf(["shop.example.com"], days_left=300))

    def source_options(self) -> dict[str, Any]:
        return {"regions": ["us-east-1"], "endpoint_url": self.endpoint, "export_private": True}

    def broken_options(self) -> dict[str, Any]:
        return {"regions": ["us-east-1"], "endpoint_url": "http://127.0.0.1:9", "timeout_seconds": 2}

    def fingerprint(self, to: str) -> Hashable:
        acm = acm_client(self.endpoint, to)
        found = []
        for summary in acm.list_certificates()["CertificateSummaryList"]:
            arn = summary["CertificateArn"]
            described = acm.describe_certificate(CertificateArn=arn)["Certificate"]
            pem = acm.get_certificate(CertificateArn=arn)["Certificate"]
            found.append((tuple(domains(described)), leaf(pem).sha256))
        return tuple(sorted(found))

    def perturb(self, to: str) -> str:
        """Another certificate for the same domain re-imported behind the restored ARN."""
        acm = acm_client(self.endpoint, to)
        (arn,) = [c["CertificateArn"] for c in acm.list_certificates()["CertificateSummaryList"]
                  if c["DomainName"] == "api.internal.example.com"]
        other = make_leaf(["api.internal.example.com"], days_left=100)
        acm.import_certificate(CertificateArn=arn, Certificate=other.certificate, PrivateKey=other.key,
                               CertificateChain=other.chain)
        (source,) = [c["CertificateArn"] for c in acm_client(self.endpoint, "us-east-1").list_certificates()[
            "CertificateSummaryList"] if c["DomainName"] == "api.internal.example.com"]
        return identity(source)

    def source_fingerprint(self) -> Hashable:
        """The private-CA certificates: the imported one has no key to export, so restore skips it."""
        acm = acm_client(self.endpoint, "us-east-1")
        private = {tuple(domains(acm.describe_certificate(CertificateArn=c["CertificateArn"])["Certificate"]))
                   for c in acm.list_certificates()["CertificateSummaryList"] if c.get("Type") != "IMPORTED"}
        return tuple(entry for entry in self.fingerprint("us-east-1") if entry[0] in private)

    def change_source(self) -> str:
        """A new private-CA certificate (moto's ACM cannot renew one in place)."""
        acm = acm_client(self.endpoint, "us-east-1")
        arn = acm.request_certificate(DomainName="serve.internal.example.com", CertificateAuthorityArn=CA)
        return identity(arn["CertificateArn"])

    def expected_items(self, artifacts, reader) -> set[str]:
        """One item per certificate: a private key is restored with its certificate."""
        return {a.identity for a in artifacts if a.kind == "acm-certificate"}
