"""What a certificates source needs in a pod (contract v2 run_needs): ACM in each listed region."""

from __future__ import annotations

from dr.exporters.certificates.options import CertificatesOptions
from dr.contract import AWS_CREDENTIALS, RunNeeds


def run_needs(options: CertificatesOptions) -> RunNeeds:
    endpoints = [options.endpoint_url] if options.endpoint_url else \
        [f"https://acm.{region}.amazonaws.com" for region in options.regions]
    actions = "acm:ListCertificates, acm:DescribeCertificate and acm:GetCertificate" + \
        (", and acm:ExportCertificate (billed per export for private certificates)" if options.export_private else "")
    return RunNeeds(endpoints=endpoints, credentials=list(AWS_CREDENTIALS),
                    notes=[f"the AWS identity (IRSA role or keys) needs {actions} in "
                           f"{', '.join(options.regions)}"])
