"""The audit judges a Vault snapshot's unseal dependencies (the vault exporter's) by placement.

Planted: the in-cluster Vault is backed up (its snapshot provides its address), and what
unseals it lives in the failed region (a KMS key in eu-west-1) or the failed cluster (a transit
Vault). Independent: the KMS key in us-east-1, a transit Vault in the security account.
"""

from __future__ import annotations

import pytest

from dr.exporters.vault import VaultExporter
from dr.exporters.vault.unsealing import unseal_dependencies
from tests.audit import worlds
from tests.audit.conftest import flagged

TRANSIT_IN_CLUSTER = "http://vault-transit.vault.svc.cluster.local:8200"
TRANSIT_ELSEWHERE = "https://escrow.security.example.com"


def vault_source(unseal: dict) -> dict:
    return {"name": "platform-vault", "type": "vault", "rpo": "1h", "address": worlds.VAULT,
            "auth": {"method": "kubernetes", "role": "dr-backup"}, "unseal": unseal}


def audit(world, unseal: dict, failed: str):
    """Back the world up with a vault source as the exporter records it; audit one failure."""
    options = VaultExporter.Options(**{k: v for k, v in vault_source(unseal).items()
                                       if k not in ("name", "type", "rpo")})
    contents = {**worlds.PLANTED, "platform-vault": [
        ("vault-raft-snapshot", "raft-snapshot", unseal_dependencies(options), {"provides": [worlds.VAULT]}),
        ("vault-configuration", "configuration", [])]}
    world.backup(contents)
    plan = world.plan(sources=worlds.plan_data(world.repo_path)["sources"] + [vault_source(unseal)])
    return world.audit(plan, failed=[failed])


@pytest.mark.parametrize("unseal, failed, reference", [
    ({"type": "awskms", "key_id": "mrk-1", "region": "eu-west-1"}, "eu-west-1",
     "https://kms.eu-west-1.amazonaws.com/mrk-1"),
    ({"type": "transit", "address": TRANSIT_IN_CLUSTER, "key_name": "unseal"}, "train-eu1",
     f"{TRANSIT_IN_CLUSTER}/v1/transit/keys/unseal"),
])
def test_unseal_key_in_the_failed_domain_is_a_blocker(world, unseal, failed, reference):
    report = audit(world, unseal, failed)
    assert ("unseal-key-in-failed-domain", reference) in flagged(report)
    finding = next(f for f in report.findings if f.code == "unseal-key-in-failed-domain")
    assert finding.severity == "blocker" and finding.runbook == "runbooks/unseal-key-in-failed-domain.md"


@pytest.mark.parametrize("unseal, failed", [
    ({"type": "awskms", "key_id": "mrk-1", "region": "us-east-1"}, "eu-west-1"),
    ({"type": "transit", "address": TRANSIT_ELSEWHERE, "key_name": "unseal"}, "train-eu1"),
])
def test_unseal_key_outside_the_failed_domain_is_not_flagged(world, unseal, failed):
    report = audit(world, unseal, failed)
    assert not [f for f in report.findings if f.code == "unseal-key-in-failed-domain"]
    # the snapshot is a copy of the in-cluster Vault: its dependents are remapped, not blocked
    assert ("dependency-remapped", worlds.VAULT) in flagged(report)
    assert ("secret-store-in-failed-domain", worlds.VAULT) not in flagged(report)


def test_shamir_custodians_are_placed_by_the_plan(world):
    unseal = {"type": "shamir", "custodians": ["alice", "bob"], "threshold": 2}
    report = audit(world, unseal, "train-eu1")
    assert ("unknown-location", "custodian:alice") in flagged(report)  # nothing places them yet
