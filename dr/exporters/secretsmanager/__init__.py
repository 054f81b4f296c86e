"""The `secretsmanager` exporter: AWS Secrets Manager secrets that External Secrets and workloads read.

Where it sits: a plugin like any other (entry point `secretsmanager`). For every selected
secret it records the metadata a recovery needs to know (ARN, KMS key, rotation, replica
regions, tags, versions) as readable JSON, and, only when the plan asks (`include_values`),
the current value as secret-class content encrypted to the plan's recipients.

  listing   the client, the selection, the metadata record, value encoding
  exporter  the Exporter class: declarations, discover, export, restore
"""

from dr.exporters.secretsmanager.exporter import SecretsManagerExporter

__all__ = ["SecretsManagerExporter"]
