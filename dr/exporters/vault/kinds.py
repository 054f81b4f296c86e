"""Names the vault exporter's modules share: its artifact kinds and its restore options' keys.

Their own module so that the exporter class can name them without importing the restore
(or hvac, which the restore and the backup need, but declaring the exporter does not).
"""

SNAPSHOT, CONFIG = "vault-raft-snapshot", "vault-configuration"
TOKEN_KEY = "vault-target-token-file"
UNSEAL_KEY = "vault-unseal-keys-file"
