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


# -- a multi-region unseal key: any replica region unseals (the exporter's any-of need) ----------
MRK = "mrk-0123456789abcdef"
PRIMARY, REPLICA = f"https://kms.eu-west-1.amazonaws.com/{MRK}", f"https://kms.us-east-1.amazonaws.com/{MRK}"


def audit_multi_region(world, failed: list[str]):
    """The snapshot as the exporter records a multi-region key read with DescribeKey (primary in
    eu-west-1, replica in us-east-1: tests/exporters/test_vault_exporter.py reads a real one from
    moto KMS); audited with the installed exporters, as `dr audit` runs it."""
    from dr.audit import choose_audited_target, run_audit, scenarios_for
    from dr.contract.registry import Registry
    from dr.exporters.vault.kms import KeyRegions
    from dr.planner.planning import planning_exporters

    unseal = {"type": "awskms", "key_id": MRK, "region": "eu-west-1"}
    options = VaultExporter.Options(**{k: v for k, v in vault_source(unseal).items() if k not in ("name", "type", "rpo")})
    regions = KeyRegions(MRK, ["eu-west-1", "us-east-1"], True, replicas=["us-east-1"])
    contents = {**worlds.PLANTED, "platform-vault": [
        ("vault-raft-snapshot", "raft-snapshot", unseal_dependencies(options, regions), {"provides": [worlds.VAULT]})]}
    world.backup(contents)
    plan = world.plan(sources=worlds.plan_data(world.repo_path)["sources"] + [vault_source(unseal)])
    scenarios = scenarios_for(plan, failed)
    target = choose_audited_target(plan, scenarios)
    exporters = planning_exporters(plan, Registry())
    return plan, run_audit(plan, world.repo, target, scenarios, exporters=exporters)


def unseal_findings(report):
    return [f for f in report.findings if f.code == "unseal-key-in-failed-domain"]


def test_multi_region_key_with_a_surviving_replica_is_not_a_blocker(world):
    plan, report = audit_multi_region(world, ["eu-west-1"])
    assert unseal_findings(report) == []
    [judged] = [j for j in report.scenarios[0].judged if j.use.kind == "unseal-kms"]
    assert judged.verdict == "ok" and judged.use.reference == REPLICA


def test_multi_region_key_lost_in_every_region_is_a_blocker_naming_each(world):
    plan, report = audit_multi_region(world, ["eu-west-1", "us-east-1"])
    [finding] = unseal_findings(report)
    assert finding.severity == "blocker" and finding.sources == ["platform-vault"]
    assert PRIMARY in finding.message and REPLICA in finding.message
    assert finding.runbook == "runbooks/unseal-key-in-failed-domain.md"


@pytest.mark.parametrize("failed, verdict", [(["eu-west-1"], "ok"), (["eu-west-1", "us-east-1"], "blocker")])
def test_restore_planner_judges_the_multi_region_key_the_same_way(world, failed, verdict):
    from dr.contract.registry import Registry
    from dr.restore import prepare

    plan, _ = audit_multi_region(world, failed)
    prepared = prepare(plan, world.repo, plan.target("dr-us"), Registry(), failed=failed, force=True)
    step = next(s for s in prepared.restore_plan.steps if s.name == "platform-vault")
    [need] = [n for n in step.needs if n.kind == "unseal-kms"]
    assert need.verdict == verdict
