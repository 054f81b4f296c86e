"""The demo's Vault: an OpenBao raft server in cluster-a whose snapshot is backed up, then restored
into a fresh OpenBao in region-b, unsealed with the original shares, and a secret read back.

The servers are started by whoever runs `dr demo` (scripts/demo starts them beside the stand-in
cluster) and named with --vault URL --vault-target URL --vault-credentials DIR. DIR holds
`token` (the platform Vault's), `unseal-keys` (its shares, one a line) and `target-token` (the
fresh Vault's). No token or secret value is ever printed.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import hvac

from dr.demo.narrating import Narrator

SOURCE = """\
  - name: platform-vault
    type: vault
    rpo: 1h
    address: "{url}"
    auth: {{method: token, token_file: "{credentials}/token"}}
    unseal: {{type: shamir, custodians: [alice, bob, carol], threshold: 2}}
"""
LOCATIONS = """\
  - {{name: platform-vault, domain: cluster-a, kind: service, prefixes: ["{url}"]}}
  - {{name: dr-vault, domain: region-b, kind: service, prefixes: ["{target}"]}}
  - {{name: unseal-custodians, domain: region-b, kind: people, prefixes: ["custodian:"]}}
"""
SECRET = ("secret", "team-a/wandb")  # mount, path: what the stand-in script writes


@dataclass(frozen=True)
class VaultStandIn:
    url: str
    target: str
    credentials: str

    def whole_plan_environment(self) -> dict[str, str]:
        """A whole-plan restore takes no per-source options: the restored Vault (now holding the
        snapshot's tokens) is reached with VAULT_TOKEN, read from the credentials folder."""
        with open(os.path.join(self.credentials, "token"), encoding="utf-8") as handle:
            return {"VAULT_TOKEN": handle.read().strip()}

    def restore_arguments(self) -> list[str]:
        return ["--target-token-file", f"{self.credentials}/target-token",
                "--unseal-keys-file", f"{self.credentials}/unseal-keys"]

    def restore_step(self, identity_path: str) -> tuple[str, list[str]]:
        return ("Restore the Vault's raft snapshot into a fresh OpenBao in region-b, unsealed with the "
                "original key shares", ["restore", "--source", "platform-vault", "--to", self.target,
                                        *self.restore_arguments(), "--identity", identity_path])


def plan_parts(vault: VaultStandIn | None) -> tuple[str, str]:
    """The plan's extra locations and its vault source ('' for both without a Vault)."""
    if vault is None:
        return "", ""
    credentials = os.path.abspath(vault.credentials)
    return (LOCATIONS.format(url=vault.url, target=vault.target),
            SOURCE.format(url=vault.url, credentials=credentials))


def read_back(vault: VaultStandIn, out: Narrator) -> bool:
    """The restored Vault answers the original token and holds the secret as the original does."""
    with open(os.path.join(vault.credentials, "token"), encoding="utf-8") as handle:
        token = handle.read().strip()
    mount, path = SECRET
    versions = []
    for url in (vault.url, vault.target):
        answer = hvac.Client(url, token=token).secrets.kv.v2.read_secret_version(
            path, mount_point=mount, raise_on_deleted_version=True)["data"]
        versions.append((answer["data"], answer["metadata"]["version"]))
    if versions[0] != versions[1]:
        out.error(f"{mount}/{path} read from the restored Vault {vault.target} differs from the original's")
        return False
    out.say(f"The restored OpenBao at {vault.target} unsealed with the original shares, accepts the original "
            f"token, and its {mount}/{path} (version {versions[1][1]}, {len(versions[1][0])} key) equals the "
            "original's.")
    return True
