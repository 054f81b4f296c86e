"""The `vault` exporter: HashiCorp Vault and OpenBao, the secret store every other restore needs.

Where it sits: a plugin like any other (entry point `vault`), run by `dr backup` and
`dr restore --source NAME --to https://new-vault`. The modules, in the order of the flow:

  options        the plan's options: address, auth (token / AppRole / Kubernetes), unseal
  connecting     unauthenticated state (health, raft index), login, streamed reads
  snapshots      the raft snapshot's checks (gzip, tar, SHA256SUMS) while it streams
  configuration  the configuration as readable, diffable data, no secret values
  unsealing      how the Vault unseals, as dependencies the audit places
  exporter       the Exporter class: declarations, discover, export, restore
  kinds          the artifact kinds and restore option keys the modules share
  restoring      the restore into a fresh raft cluster (snapshot-force), unseal, read back
"""

from dr.exporters.vault.exporter import VaultExporter

__all__ = ["VaultExporter"]
