"""The `certificates` exporter's plan options (documented in docs/exporters/certificates.md)."""

from __future__ import annotations

from pydantic import Field

from dr.contract import ExporterOptions


class CertificatesOptions(ExporterOptions):
    regions: list[str] = Field(min_length=1, description="the regions whose ACM certificates are backed up")
    endpoint_url: str | None = None  # a VPC endpoint, or a test server
    # a certificate that expires within the source's rto plus this margin is a finding
    expiry_margin_days: int = Field(default=14, ge=0)
    # also back up the private key of each exportable certificate (ExportCertificate), secret-class
    export_private: bool = False
    timeout_seconds: float = Field(default=30, gt=0)  # connect and read timeout of each request
