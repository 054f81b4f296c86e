"""A Secrets Manager secret's name is as secret as its value (docs/format.md 8.1).

Canaries in the names of two secrets in moto's Secrets Manager (one with a value, one without:
its `secretsmanager-no-value` finding goes into the manifest): `dr backup` twice into a local
repository, then every stored file is searched, the second backup must upload nothing, and a
restore with the identity recreates the secret under its exact name in another region.
"""

from __future__ import annotations

import json
import uuid

import boto3

from dr.cli.main import main
from dr.repository.repositories import Repository
from dr.repository.stores.local import LocalStore
from tests.cli.planfiles import key_pair, local_target, write_plan
from tests.cli.test_name_canary import assert_clean, backups

SOURCE = """  - name: cloud-secrets
    type: secretsmanager
    region: us-east-1
    endpoint_url: "{endpoint}"
    name_prefix: "{prefix}"
    include_values: true
"""


def _plant(endpoint: str) -> tuple[str, list[str]]:
    """(the name prefix, the canaries): a secret with a value and tags, and one without a value,
    encrypted with a KMS key of its own whose alias repeats its name (the last canary)."""
    canaries = [f"smcanary{uuid.uuid4().hex[:10]}", "prod-db-root-password", f"emptycanary{uuid.uuid4().hex[:8]}"]
    sm = boto3.client("secretsmanager", region_name="us-east-1", endpoint_url=endpoint)
    kms = boto3.client("kms", region_name="us-east-1", endpoint_url=endpoint)
    alias = f"alias/{canaries[2]}-key"
    kms.create_alias(AliasName=alias, TargetKeyId=kms.create_key()["KeyMetadata"]["KeyId"])
    prefix = canaries[0] + "/"
    sm.create_secret(Name=prefix + canaries[1], SecretString="the value is encrypted already",
                     Description="what it opens", Tags=[{"Key": "owner", "Value": "dba"}])
    sm.create_secret(Name=prefix + canaries[2], Description="no value yet", KmsKeyId=alias)
    return prefix, canaries + [alias]


def test_no_secret_name_reaches_a_local_repository_and_the_second_backup_uploads_nothing(
        tmp_path, aws_env, moto_endpoint, capsys):
    identity, recipient = key_pair(tmp_path)
    prefix, canaries = _plant(moto_endpoint)
    repo = tmp_path / "repo"
    plan = write_plan(tmp_path / "plan.yaml", local_target(repo),
                      SOURCE.format(endpoint=moto_endpoint, prefix=prefix), [recipient])
    first, second = backups(plan, capsys)
    assert first["bytes_uploaded"] > 0 and first["artifacts"] == 3  # two records, one value
    assert second["bytes_uploaded"] == 0 and second["blobs_uploaded"] == 0 and second["artifacts_reused"] == 3
    assert_clean([p.read_bytes() for p in repo.rglob("*") if p.is_file()], canaries)
    [finding] = Repository(LocalStore(str(repo))).snapshots()[-1].sources[0].findings
    assert finding["code"] == "secretsmanager-no-value" and "cloud-secrets/hmac-sha256:" in finding["message"]
    _audit_names_with_the_identity_only(plan, identity, canaries, capsys)
    _restored_by_name(plan, identity, prefix + canaries[1], moto_endpoint, capsys)


def _audit_names_with_the_identity_only(plan: str, identity: str, canaries: list[str], capsys) -> None:
    """The report names the secret without a value (its needs are unplaced: the other's value
    artifact provides them) and its key's alias by digest; with --identity, by name, in the
    finding the backup recorded too; the verdicts are the same."""
    capsys.readouterr()
    audit = ["audit", "--plan", plan, "--failed", "region-a", "--json"]
    code = main(audit)
    sealed = capsys.readouterr().out
    assert "hmac-sha256:" in sealed and not any(c in sealed for c in canaries)
    assert main(audit + ["--identity", identity]) == code
    named = capsys.readouterr().out
    prefix, secret, empty, alias = canaries
    assert f"https://secretsmanager.us-east-1.amazonaws.com/{prefix}/{empty}" in named
    assert f"https://kms.us-east-1.amazonaws.com/{alias}" in named
    assert f"cloud-secrets/{prefix}/{empty} (a sealed name" in named  # the no-value finding
    assert secret not in named  # its value artifact provides what it needs: named nowhere
    assert _verdicts(named) == _verdicts(sealed) and _codes(named) == _codes(sealed)


def _verdicts(document: str) -> list:
    return [sorted(s["dependencies"].items()) for s in json.loads(document)["scenarios"]]


def _codes(document: str) -> list:
    return sorted((f["code"], f["severity"], f["kind"]) for f in json.loads(document)["findings"])


def _restored_by_name(plan: str, identity: str, name: str, endpoint: str, capsys) -> None:
    """Without the identity nothing is restored; with it, the secret comes back under its name."""
    restore = ["restore", "--plan", plan, "--source", "cloud-secrets", "--to", "us-west-2"]
    assert main(restore) != 0
    west = boto3.client("secretsmanager", region_name="us-west-2", endpoint_url=endpoint)
    assert not west.list_secrets(Filters=[{"Key": "name", "Values": [name]}])["SecretList"]
    capsys.readouterr()
    assert main(restore + ["--identity", identity]) == 0, capsys.readouterr()
    assert west.get_secret_value(SecretId=name)["SecretString"] == "the value is encrypted already"
    assert west.describe_secret(SecretId=name)["Description"] == "what it opens"
