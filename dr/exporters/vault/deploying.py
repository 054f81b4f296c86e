"""What a vault source needs in a pod (contract v2 run_needs): its address, and its login.

A backup takes a raft snapshot: it reaches the Vault and logs in (a token, an AppRole secret id,
or the pod's service account token). What unseals it is needed by a restore, not here.
"""

from __future__ import annotations

import os

from dr.contract import Credential, RunNeeds
from dr.exporters.vault.options import AppRoleAuth, KubernetesAuth, TokenAuth, VaultOptions


def run_needs(options: VaultOptions, base_dir: str, source: str) -> RunNeeds:
    needs = RunNeeds(endpoints=[options.address])
    auth = options.auth
    if isinstance(auth, TokenAuth):
        needs.credentials.append(_credential(f"vault-token-{source}", "a Vault token allowed "
                                 "sys/storage/raft/snapshot", base_dir, auth.token_file, auth.token_env))
    elif isinstance(auth, AppRoleAuth):
        needs.credentials.append(_credential(f"vault-secret-id-{source}", f"the secret id of AppRole "
                                 f"{auth.role_id}", base_dir, auth.secret_id_file, auth.secret_id_env))
    elif isinstance(auth, KubernetesAuth):
        needs.service_account_token = True
        needs.notes.append(f"Vault kubernetes login (role {auth.role}): bind the Vault role to the "
                           "rendered ServiceAccount")
    if options.ca_cert:
        needs.credentials.append(Credential(f"vault-ca-{source}", "the PEM bundle that signs the Vault's "
                                            "certificate", path=os.path.join(base_dir, options.ca_cert)))
    return needs


def _credential(key: str, what: str, base_dir: str, file: str | None, env: str | None) -> Credential:
    return Credential(key, what, env=env, path=os.path.join(base_dir, file) if file else None)
