"""The secretsmanager exporter against moto's Secrets Manager and KMS over HTTP (tests.fixtures_s3)."""

from __future__ import annotations

import json
import uuid

import boto3
import pyrage
import pytest

from dr.exporters.contract import OutcomeStatus
from dr.exporters.registry import Registry
from dr.exporters.secretsmanager import SecretsManagerExporter
from dr.exporters.secretsmanager.listing import SecretsManagerUnavailable
from dr.model.artifacts import Sensitivity
from dr.repository import encryption
from dr.repository.reading import ArtifactReader
from tests.exporters.conftest import statuses


@pytest.fixture
def secrets(aws_env, moto_endpoint):
    """Three secrets under a unique prefix: a multi-region KMS key with a replica, a binary one, a plain one."""
    prefix = f"t{uuid.uuid4().hex[:8]}/"
    sm = boto3.client("secretsmanager", region_name="us-east-1", endpoint_url=moto_endpoint)
    kms = boto3.client("kms", region_name="us-east-1", endpoint_url=moto_endpoint)
    key = kms.create_key(MultiRegion=True, Description="secrets")["KeyMetadata"]["KeyId"]
    sm.create_secret(Name=prefix + "db", SecretString='{"password": "hunter2-db"}', KmsKeyId=key,
                     Description="billing database", Tags=[{"Key": "team", "Value": "billing"}],
                     AddReplicaRegions=[{"Region": "eu-west-1"}])
    sm.create_secret(Name=prefix + "tls-key", SecretBinary=b"\x00binary-key\xff")
    sm.create_secret(Name=prefix + "api", SecretString="tok-api-123")
    return {"prefix": prefix, "sm": sm, "key": key, "endpoint": moto_endpoint}


def opts(secrets, **extra) -> dict:
    return {"region": "us-east-1", "endpoint_url": secrets["endpoint"], "name_prefix": secrets["prefix"], **extra}


@pytest.fixture(scope="module")
def age_keys():
    identity, recipient = encryption.generate_identity()
    return [pyrage.x25519.Identity.from_str(identity)], recipient


def backup(harness, options, tmp_path, recipient, parent=()):
    return harness.backup(SecretsManagerExporter, options, base_dir=str(tmp_path), recipients=[recipient],
                          parent=list(parent))


def test_registered_with_the_secret_stores_role():
    assert Registry().get("secretsmanager") is SecretsManagerExporter
    assert SecretsManagerExporter.ordering.roles == frozenset({"secret-stores"})


def test_metadata_only_by_default_no_value_stored(harness, secrets, tmp_path, age_keys):
    done = backup(harness, opts(secrets), tmp_path, age_keys[1])
    p = secrets["prefix"]
    assert {(a.kind, a.identity) for a in done.artifacts} == {
        ("secretsmanager-secret", p + n) for n in ("api", "db", "tls-key")}
    db = done.by_identity()[p + "db"]
    assert db.meta["kms_key"] == secrets["key"] and db.meta["replica_regions"] == ["eu-west-1"]
    record = json.loads(ArtifactReader(harness.repo).read(db))
    assert record["Description"] == "billing database" and record["Tags"] == [{"Key": "team", "Value": "billing"}]
    assert [r["Region"] for r in record["ReplicationStatus"]] == ["eu-west-1"]
    stored = harness.stored_bytes()
    assert b"hunter2-db" not in stored and b"tok-api-123" not in stored
    discovered = list(SecretsManagerExporter(_context(opts(secrets))).discover())
    assert {(d.kind, d.identity) for d in discovered} == {(a.kind, a.identity) for a in done.artifacts}


def _context(options):
    from dr.exporters.contract import ExportContext

    return ExportContext("src", SecretsManagerExporter.Options(**options), "/")


def test_values_are_secret_reused_until_they_change(harness, secrets, tmp_path, age_keys):
    options = opts(secrets, include_values=True)
    first = backup(harness, options, tmp_path, age_keys[1])
    value = first.by_identity()[secrets["prefix"] + "db:value"]
    assert value.sensitivity == Sensitivity.SECRET and value.encrypted
    assert value.meta["provides"] == [value.meta["arn"]]
    assert b"hunter2-db" not in harness.stored_bytes()
    second = backup(harness, options, tmp_path, age_keys[1], parent=first.artifacts)
    assert second.stats["artifacts_reused"] == 6 and second.stats["bytes_read"] == 0
    secrets["sm"].put_secret_value(SecretId=secrets["prefix"] + "api", SecretString="tok-api-456")
    third = backup(harness, options, tmp_path, age_keys[1], parent=second.artifacts)
    assert third.stats["artifacts_reused"] == 4  # the value and the metadata (new version) of api


def test_restore_into_another_region_then_unchanged_conflict_overwrite(harness, secrets, tmp_path, age_keys):
    keys, recipient = age_keys
    options, p = opts(secrets, include_values=True), secrets["prefix"]
    done = backup(harness, options, tmp_path, recipient)
    restore = lambda **kw: harness.restore(SecretsManagerExporter, options, done.artifacts, identities=keys,  # noqa: E731
                                           to="us-west-2", **kw)
    first = statuses(restore())
    assert {i for i, s in first.items() if s == OutcomeStatus.RESTORED} == {p + n + ":value" for n in ("api", "db", "tls-key")}
    assert {s for i, s in first.items() if not i.endswith(":value")} == {OutcomeStatus.SKIPPED}
    west = boto3.client("secretsmanager", region_name="us-west-2", endpoint_url=secrets["endpoint"])
    assert west.get_secret_value(SecretId=p + "tls-key")["SecretBinary"] == b"\x00binary-key\xff"
    described = west.describe_secret(SecretId=p + "db")
    assert described["Description"] == "billing database" and described["Tags"] == [{"Key": "team", "Value": "billing"}]
    assert set(statuses(restore()).values()) == {OutcomeStatus.UNCHANGED, OutcomeStatus.SKIPPED}
    west.put_secret_value(SecretId=p + "api", SecretString="changed at the destination")
    assert statuses(restore())[p + "api:value"] == OutcomeStatus.CONFLICT
    assert statuses(restore(overwrite=True))[p + "api:value"] == OutcomeStatus.RESTORED
    assert west.get_secret_value(SecretId=p + "api")["SecretString"] == "tok-api-123"


def test_unreachable_endpoint_fails_the_source(harness, aws_env, tmp_path, age_keys):
    options = {"region": "us-east-1", "endpoint_url": "http://127.0.0.1:9", "timeout_seconds": 2}
    with pytest.raises(SecretsManagerUnavailable):
        backup(harness, options, tmp_path, age_keys[1])
