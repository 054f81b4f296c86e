"""The `certificates` exporter: ACM certificates, and whether a recovery region has them.

Where it sits: a plugin like any other (entry point `certificates`). For every certificate of
every region the plan lists, it records what DescribeCertificate says and the certificate's
own bytes, judges expiry from those bytes (a certificate expiring within the source's rto plus
a margin is a finding), and records each in-use certificate as a dependency on its ARN, so that
the audit places it in its region: lost with the region, and not stood in for by a certificate
for the same domains in another region (or by its own key in the snapshot), it is a blocker.

  options    the plan's options              covering   which certificate stands in for which
  acm        the ACM calls                   exporting  a backup: read, judge, write
  parsing    X.509 facts from the bytes      restoring  import into a region, read back
  records    the record and expiry findings  deploying  what a pod needs (run_needs)
  exporter   the contract's class
"""

from dr.exporters.certificates.exporter import CertificatesExporter

__all__ = ["CertificatesExporter"]
