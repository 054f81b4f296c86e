"""The secretsmanager exporter against moto's Secrets Manager and KMS over HTTP (tests.fixtures_s3)."""

from __future__ import annotations

import json
import uuid

import boto3
import pyrage
import pytest

from dr.contract import OutcomeStatus
from dr.contract.registry import Registry
from dr.exporters.secretsmanager import SecretsManagerExporter
from dr.exporters.secretsmanager.listing import SecretsManagerUnavailable, sealed_text
from dr.model.artifacts import Sensitivity
from dr.repository import encryption, names
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
    OPENS[recipient] = [pyrage.x25519.Identity.from_str(identity)]
    return OPENS[recipient], recipient


OPENS: dict[str, list] = {}  # recipient -> the identities a restore would read the names with (format.md 8.1)


def backup(harness, options, tmp_path, recipient, parent=()):
    return harness.backup(SecretsManagerExporter, options, base_dir=str(tmp_path), recipients=[recipient],
                          parent=list(parent), identities=OPENS.get(recipient))


def test_registered_with_the_secret_stores_role():
    assert issubclass(Registry().get("secretsmanager"), SecretsManagerExporter)  # completed with the defaults of capabilities it lacks
    assert SecretsManagerExporter.ordering.roles == frozenset({"secret-stores"})


def test_metadata_only_by_default_no_value_stored(harness, secrets, tmp_path, age_keys):
    done = backup(harness, opts(secrets), tmp_path, age_keys[1])
    p = secrets["prefix"]
    assert {(a.kind, a.identity) for a in done.artifacts} == {
        ("secretsmanager-secret", p + n) for n in ("api", "db", "tls-key")}
    db = done.by_identity()[p + "db"]
    assert db.meta["kms_key"] == secrets["key"] and db.meta["replica_regions"] == ["eu-west-1"]
    assert db.sensitivity == Sensitivity.SECRET and db.encrypted  # it names the secret (format.md 8.1)
    record = json.loads(ArtifactReader(harness.repo, age_keys[0]).read(db))
    assert record["Description"] == "billing database" and record["Tags"] == [{"Key": "team", "Value": "billing"}]
    assert [r["Region"] for r in record["ReplicationStatus"]] == ["eu-west-1"]
    stored = harness.stored_bytes()
    assert b"hunter2-db" not in stored and b"tok-api-123" not in stored
    discovered = list(SecretsManagerExporter(_context(opts(secrets))).discover())
    assert {(d.kind, d.identity) for d in discovered} == {(a.kind, a.identity) for a in done.artifacts}


def _context(options):
    from dr.contract import ExportContext

    return ExportContext("src", SecretsManagerExporter.Options(**options), "/")


def test_values_are_secret_reused_until_they_change(harness, secrets, tmp_path, age_keys):
    options = opts(secrets, include_values=True)
    first = backup(harness, options, tmp_path, age_keys[1])
    value = first.by_identity()[secrets["prefix"] + "db:value"]
    assert value.sensitivity == Sensitivity.SECRET and value.encrypted
    arn, name = value.meta["arn"], secrets["prefix"] + "db"
    assert value.meta["provides"][0] == arn  # and each region's copy: the audit counts the snapshot's
    assert {f"https://secretsmanager.{r}.amazonaws.com/{name}" for r in ("us-east-1", "eu-west-1")} <= \
        set(value.meta["provides"])
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


# -- the audit: a secret with no copy outside the failed region ----------------------------------
def _audit(harness, tmp_path, options: dict, failed: list[str], live=None):
    """Audit the harness's snapshot (source `src`) with regional placement rules, as `dr audit` runs it."""
    import yaml

    from dr.audit import choose_audited_target, run_audit, scenarios_for
    from dr.model.plan_loading import load_plan
    from dr.planner.planning import planning_exporters

    regions = ["us-east-1", "eu-west-1"]
    data = {"version": 1, "name": "plan",
            "failure_domains": [{"name": "aws", "kind": "provider", "children": [
                {"name": r, "kind": "region"} for r in regions]}, {"name": "offsite", "kind": "site"}],
            "placement_rules": [{"match": f"*.{r}.amazonaws.com", "domain": r} for r in regions],
            "protects_against": regions,
            "targets": [{"name": "dr", "url": harness.root, "domain": "offsite"}],
            "sources": [{"name": "src", "type": "secretsmanager", **options}],
            "encryption": {"recipients": list(OPENS)}}  # the audit matches sealed provides with them
    (tmp_path / "plan.yaml").write_text(yaml.safe_dump(data))
    plan = load_plan(str(tmp_path / "plan.yaml"), Registry())
    scenarios = scenarios_for(plan, failed)
    target = choose_audited_target(plan, scenarios)
    return run_audit(plan, harness.repo, target, scenarios, exporters=planning_exporters(plan, Registry()), live=live)


def test_audit_secret_without_a_replica_outside_the_failed_region_is_a_blocker(harness, secrets, tmp_path, age_keys):
    options = opts(secrets)
    backup(harness, options, tmp_path, age_keys[1])
    p = secrets["prefix"]
    report = _audit(harness, tmp_path, options, ["us-east-1"])
    found = [f for f in report.findings if f.code == "secret-in-failed-region"]
    assert found and {f.severity for f in found} == {"blocker"}
    assert all(f.runbook == "runbooks/secret-in-failed-region.md" for f in found)
    named = " ".join(f.message for f in found)
    sealed = _sealer(age_keys[1])  # the audit runs without the identity: it names sealed names (format.md 8.1)
    assert sealed.name(p + "api") in named and sealed.name(p + "tls-key") in named  # one region only
    assert sealed.name(p + "db") not in named  # replicated to eu-west-1, with the key's replica there
    assert p not in named


def _sealer(recipient: str) -> names.Sealer:
    return names.Sealer([recipient], encryption.parse_recipients([recipient]))


def test_audit_replicated_secret_losing_every_region_is_a_blocker_naming_each(harness, secrets, tmp_path, age_keys):
    options = opts(secrets, names=[secrets["prefix"] + "db"])
    backup(harness, options, tmp_path, age_keys[1])
    report = _audit(harness, tmp_path, options, ["us-east-1", "eu-west-1"])
    copies = [f for f in report.findings if f.code == "secret-in-failed-region" and f.kind == "secretsmanager-secret"]
    [finding] = copies
    name = _sealer(age_keys[1]).name(secrets["prefix"] + "db")
    for region in ("us-east-1", "eu-west-1"):
        assert f"https://secretsmanager.{region}.amazonaws.com/{name}" in finding.message
    assert secrets["prefix"] not in finding.message


def test_audit_secret_held_in_the_snapshot_is_remapped_not_blocked(harness, secrets, tmp_path, age_keys):
    options = opts(secrets, include_values=True, names=[secrets["prefix"] + "api"])
    backup(harness, options, tmp_path, age_keys[1])
    report = _audit(harness, tmp_path, options, ["us-east-1"])
    assert not [f for f in report.findings if f.code == "secret-in-failed-region"]
    assert {f.kind for f in report.findings if f.code == "dependency-remapped"} >= {"secretsmanager-secret"}


def test_an_error_naming_a_secret_is_stored_without_its_name(harness, secrets, tmp_path, age_keys):
    """The error goes into the manifest (format.md 8.1): it says which of `names` failed, not the name."""
    missing = secrets["prefix"] + "missing-canary"
    with pytest.raises(SecretsManagerUnavailable) as raised:
        backup(harness, opts(secrets, names=[secrets["prefix"] + "db", missing]), tmp_path, age_keys[1])
    assert str(raised.value).startswith("names[1]: ResourceNotFoundException") and missing not in str(raised.value)
    denied = ("AccessDeniedException: User: arn:aws:iam::1:user/dr is not authorized to perform: secretsmanager:"
              "DescribeSecret on resource: arn:aws:secretsmanager:us-east-1:1:secret:prod-db-root-AbCdEf because")
    assert sealed_text(denied, "prod-db-root") == (
        "AccessDeniedException: User: arn:aws:iam::1:user/dr is not authorized to perform: secretsmanager:"
        "DescribeSecret on resource: arn:aws:secretsmanager:(withheld) because")
    assert sealed_text("no secret prod-db-root here", "prod-db-root") == "no secret (a secret's name, withheld) here"


def test_audit_live_finds_the_sealed_records_and_only_a_new_secret(harness, secrets, tmp_path, age_keys):
    """Coverage compares what discover() names with the keyed identities (format.md 8.1)."""
    options = opts(secrets)
    backup(harness, options, tmp_path, age_keys[1])
    assert not [f for f in _audit(harness, tmp_path, options, [], Registry()).findings if f.code == "not-backed-up"]
    secrets["sm"].create_secret(Name=secrets["prefix"] + "new", SecretString="x")
    [new] = [f for f in _audit(harness, tmp_path, options, [], Registry()).findings if f.code == "not-backed-up"]
    assert secrets["prefix"] + "new" in new.message


def test_restored_content_compares_each_value_by_keyed_digest_only(harness, secrets, tmp_path, age_keys):
    """What dr drill compares: equal after the restore; a changed or deleted value differs; no
    fingerprint holds the value or its plain sha256."""
    import hashlib

    from dr.contract import RestoreRequest
    from dr.drills.comparing import difference
    keys, recipient = age_keys
    options, p = opts(secrets, include_values=True), secrets["prefix"]
    done = backup(harness, options, tmp_path, recipient)
    reader, by_identity = ArtifactReader(harness.repo, keys), {a.identity: a for a in done.artifacts}

    def compared() -> dict:
        found = list(SecretsManagerExporter(_context(options)).restored_content(
            done.artifacts, reader, RestoreRequest(to="eu-central-1")))
        text = json.dumps([(c.restored, c.backed_up) for c in found])
        assert "tok-api-123" not in text and hashlib.sha256(b"tok-api-123").hexdigest()[:16] not in text
        return {c.item: difference(c, by_identity[c.item], reader) for c in found}
    values = {p + n + ":value" for n in ("api", "db", "tls-key")}
    assert compared() == {v: "nothing of it is at the destination" for v in values}
    harness.restore(SecretsManagerExporter, options, done.artifacts, identities=keys, to="eu-central-1")
    assert compared() == {v: "" for v in values}
    central = boto3.client("secretsmanager", region_name="eu-central-1", endpoint_url=secrets["endpoint"])
    central.put_secret_value(SecretId=p + "api", SecretString="changed at the destination")
    central.delete_secret(SecretId=p + "tls-key", ForceDeleteWithoutRecovery=True)
    found = compared()
    assert "fingerprint hmac-sha256" in found[p + "api:value"] and found[p + "db:value"] == ""
    assert found[p + "tls-key:value"] == "nothing of it is at the destination"
