"""SOPS files in a files source: their master keys are dependencies the audit places.

The files are written here in SOPS's documented layout (a top-level `sops` mapping in YAML, the
flattened `sops_..._map_...` keys in ENV); their values are not really encrypted, as the sops
binary is not installed here and only the metadata matters to dr (it never decrypts them).
"""

from __future__ import annotations

import pytest
import yaml

from dr.audit import choose_audited_target, run_audit, scenarios_for
from dr.contract.registry import Registry
from dr.exporters.files import FilesExporter
from dr.model.plan_loading import load_plan
from dr.planner.planning import planning_exporters

EU = "arn:aws:kms:eu-west-1:111122223333:key/1234abcd-eu"
US = "arn:aws:kms:us-east-1:111122223333:key/1234abcd-us"
ESCROW = "age1escrow0000000000000000000000000000000000000000000000000000"


def sops_yaml(**keys) -> str:
    metadata = {"kms": [{"arn": a, "enc": "AQICAHh..."} for a in keys.get("kms", [])],
                "age": [{"recipient": r, "enc": "-----BEGIN AGE ENCRYPTED FILE-----"} for r in keys.get("age", [])],
                "lastmodified": "2026-01-01T00:00:00Z", "mac": "ENC[AES256_GCM,data:x]", "version": "3.9.4"}
    return yaml.safe_dump({"password": "ENC[AES256_GCM,data:abc,iv:x,tag:y,type:str]", "sops": metadata})


@pytest.fixture
def secrets_dir(tmp_path):
    folder = tmp_path / "secrets"
    folder.mkdir()
    (folder / "escrowed.yaml").write_text(sops_yaml(kms=[EU], age=[ESCROW]))
    (folder / "eu-only.yaml").write_text(sops_yaml(kms=[EU]))
    (folder / "two-regions.env").write_text(f"PASSWORD=ENC[AES256_GCM,data:abc]\nsops_kms__list_0__map_arn={EU}\n"
                                            f"sops_kms__list_1__map_arn={US}\nsops_version=3.9.4\n")
    (folder / "plain.yaml").write_text("not: encrypted\n")
    return folder


def test_master_keys_are_recorded_per_file(harness, secrets_dir, tmp_path):
    done = harness.backup(FilesExporter, {"paths": [str(secrets_dir)]}, base_dir=str(tmp_path))
    deps = {a.identity: [(d.kind, d.reference) for d in a.dependencies] for a in done.artifacts}
    assert deps["secrets/escrowed.yaml"] == [("sops-key", "https://kms.eu-west-1.amazonaws.com/key/1234abcd-eu"),
                                             ("sops-key", f"age:{ESCROW}")]
    assert deps["secrets/plain.yaml"] == []
    assert [r for _, r in deps["secrets/two-regions.env"]] == [
        "https://kms.eu-west-1.amazonaws.com/key/1234abcd-eu", "https://kms.us-east-1.amazonaws.com/key/1234abcd-us"]
    off = harness.backup(FilesExporter, {"paths": [str(secrets_dir)], "sops_scan": False}, base_dir=str(tmp_path))
    assert not any(a.dependencies for a in off.artifacts)


def audit(harness, tmp_path, secrets_dir, failed):
    regions = ["eu-west-1", "us-east-1"]
    data = {"version": 1, "name": "plan",
            "failure_domains": [{"name": "aws", "kind": "provider", "children": [
                {"name": r, "kind": "region"} for r in regions]}, {"name": "offsite", "kind": "site"},
                {"name": "escrow", "kind": "site"}],
            "placement_rules": [{"match": f"*.{r}.amazonaws.com", "domain": r} for r in regions],
            "locations": [{"name": "age-escrow", "domain": "escrow", "prefixes": [f"age:{ESCROW}"]}],
            "protects_against": regions,
            "targets": [{"name": "dr", "url": harness.root, "domain": "offsite"}],
            "sources": [{"name": "src", "type": "files", "paths": [str(secrets_dir)]}]}
    (tmp_path / "plan.yaml").write_text(yaml.safe_dump(data))
    plan = load_plan(str(tmp_path / "plan.yaml"), Registry())
    scenarios = scenarios_for(plan, failed)
    target = choose_audited_target(plan, scenarios)
    report = run_audit(plan, harness.repo, target, scenarios, exporters=planning_exporters(plan, Registry()))
    return [f for f in report.findings if f.code == "sops-key-in-failed-domain"]


def test_a_file_whose_only_key_is_in_the_failed_region_is_a_blocker(harness, secrets_dir, tmp_path):
    harness.backup(FilesExporter, {"paths": [str(secrets_dir)]}, base_dir=str(tmp_path))
    [finding] = audit(harness, tmp_path, secrets_dir, ["eu-west-1"])
    assert finding.severity == "blocker" and finding.examples == ["src/file/secrets/eu-only.yaml"]
    assert finding.runbook == "runbooks/sops-key-in-failed-domain.md"


def test_every_key_lost_is_a_blocker_naming_each_and_an_escrowed_recipient_saves_the_file(
        harness, secrets_dir, tmp_path):
    harness.backup(FilesExporter, {"paths": [str(secrets_dir)]}, base_dir=str(tmp_path))
    found = audit(harness, tmp_path, secrets_dir, ["eu-west-1", "us-east-1"])
    messages = " ".join(f.message for f in found)
    assert "two-regions.env" in messages and "1234abcd-us" in messages and "1234abcd-eu" in messages
    assert "escrowed.yaml" not in messages  # its age recipient is kept in escrow
