"""The vault exporter against real OpenBao raft servers (tests.openbao): backup, restore, faults."""

from __future__ import annotations

import json
import os
import uuid

import pyrage
import pytest

from dr.contract import ExportContext, NoDestination, OutcomeStatus
from dr.contract.registry import Registry
from dr.exporters.vault import VaultExporter
from dr.exporters.vault.connecting import VaultAuthFailed, VaultUnavailable
from dr.exporters.vault.restoring import TOKEN_KEY, UNSEAL_KEY
from dr.exporters.vault.snapshots import SnapshotDamaged
from dr.model.artifacts import Sensitivity
from dr.repository import encryption, names
from tests.exporters.conftest import statuses
from tests.exporters.cutting_proxy import CuttingProxy
from tests.openbao import OpenBao, read_kv

SNAPSHOT, CONFIG = "raft-snapshot", "configuration"


@pytest.fixture(scope="module")
def age_keys():
    identity, recipient = encryption.generate_identity()
    OPENS[recipient] = [pyrage.x25519.Identity.from_str(identity)]
    return OPENS[recipient], recipient


OPENS: dict[str, list] = {}  # recipient -> the identities a restore would read the names with (format.md 8.1)


def options(bao: OpenBao, folder, token: str | None = None, address: str | None = None, **extra) -> dict:
    path = folder / "vault-token"
    path.write_text((bao.root_token if token is None else token) + "\n")
    return {"address": address or bao.address, "auth": {"method": "token", "token_file": str(path)},
            "unseal": {"type": "shamir", "custodians": ["alice", "bob", "carol"], "threshold": 2}, **extra}


def target_files(folder, target: OpenBao | None, unseal_keys: list[str] | None) -> dict[str, str]:
    remap = {}
    if target is not None:
        (folder / "target-token").write_text(target.root_token)
        remap[TOKEN_KEY] = str(folder / "target-token")
    if unseal_keys:
        (folder / "unseal-keys").write_text("\n".join(unseal_keys))
        remap[UNSEAL_KEY] = str(folder / "unseal-keys")
    return remap


def backup(harness, opts, tmp_path, recipient, parent=()):
    return harness.backup(VaultExporter, opts, base_dir=str(tmp_path), recipients=[recipient], parent=list(parent),
                          identities=OPENS.get(recipient))


def test_registered_and_declared():
    assert issubclass(Registry().get("vault"), VaultExporter)  # completed with the defaults of capabilities it lacks
    assert "secret-stores" in VaultExporter.ordering.roles
    exporter = VaultExporter.__new__(VaultExporter)
    exporter.options = VaultExporter.Options(address="https://vault.example", auth={"method": "token", "token_env": "T"},
                                             unseal={"type": "awskms", "key_id": "k", "region": "us-east-1"})
    with pytest.raises(NoDestination, match="--to"):
        exporter.destinations([], lambda kind, ref: None)


def test_snapshot_and_configuration_round_trip(harness, openbao_source, openbao_target, tmp_path, age_keys):
    keys, recipient = age_keys
    source = openbao_source
    expected = read_kv(source)
    opts = options(source, tmp_path)
    done = backup(harness, opts, tmp_path, recipient)
    by_id = done.by_identity()
    snap, config = by_id[SNAPSHOT], by_id[CONFIG]
    assert snap.sensitivity == Sensitivity.SECRET and snap.encrypted
    assert snap.meta["provides"] == [source.address]
    assert {d.reference for d in snap.dependencies} == {"custodian:alice", "custodian:bob", "custodian:carol"}
    stored = harness.stored_bytes()
    assert not any(value in stored for value in (b"s3cret-1", b"s3cret-2", b"tok-abc", b"r0b0t"))
    assert source.root_token.encode() not in stored

    document = json.loads(_plain(harness, config))
    assert "billing-read" in document["policies"]
    assert "billing" in document["auth"]["approle/"]["roles"]
    assert document["pki"]["pki/"]["roles"]["svc"]["allowed_domains"] == ["svc.example"]
    assert [i["issuer_name"] for i in document["pki"]["pki/"]["issuers"].values()] == ["root-2026"]
    kv = document["kv"]["secret/"]  # by default the paths only: one LIST a folder, no read a secret
    assert kv["metadata"] == "paths" and kv["secrets"]["apps/billing/db"] == {}
    assert {"apps/billing/api", "platform/registry"} <= set(kv["secrets"])

    # restored without the unseal shares: the target seals; the custodians unseal it by hand
    outcomes = harness.restore(VaultExporter, opts, done.artifacts, identities=keys, to=openbao_target.address,
                               remap=target_files(tmp_path, openbao_target, None))
    assert statuses(outcomes) == {SNAPSHOT: OutcomeStatus.RESTORED, CONFIG: OutcomeStatus.SKIPPED}, outcomes
    assert "sealed now" in outcomes[0].reason
    openbao_target.unseal(source.unseal_keys)
    assert read_kv(openbao_target, source.root_token) == expected
    again = harness.restore(VaultExporter, opts, done.artifacts, identities=keys, to=openbao_target.address)
    # the same snapshot again (issue 30): a paths record holds no KV versions, but the target's
    # storage is still the snapshot's entry for entry, so nothing changed since it was restored
    assert statuses(again) == {SNAPSHOT: OutcomeStatus.UNCHANGED, CONFIG: OutcomeStatus.UNCHANGED}, again
    assert "holds the snapshot's storage entry for entry" in again[0].reason
    # what dr drill compares: the storage and the configuration by digest, read back
    assert _compared(harness, opts, done.artifacts, keys, openbao_target) == {SNAPSHOT: "", CONFIG: ""}
    # one secret written since: the storage differs, a conflict that --overwrite resolves
    openbao_target.client(source.root_token).secrets.kv.v2.create_or_update_secret(
        "apps/billing/db", secret={"password": "s3cret-9"}, mount_point="secret")
    changed = harness.restore(VaultExporter, opts, done.artifacts, identities=keys, to=openbao_target.address)
    assert statuses(changed)[SNAPSHOT] == OutcomeStatus.CONFLICT, changed
    assert "its storage differs from the snapshot's" in changed[0].reason
    compared = _compared(harness, opts, done.artifacts, keys, openbao_target)
    assert "entries, sha256" in compared[SNAPSHOT] and compared[CONFIG] == ""
    assert "s3cret" not in json.dumps(compared)


def _compared(harness, opts, artifacts, keys, target) -> dict:
    """What dr drill finds of each artifact at `target`: "" or what differs from the backup."""
    from dr.contract import RestoreRequest
    from dr.drills.comparing import difference
    from dr.repository.reading import ArtifactReader
    reader, by_identity = ArtifactReader(harness.repo, keys), {a.identity: a for a in artifacts}
    exporter = VaultExporter(ExportContext("src", VaultExporter.Options(**opts), "/"))
    return {c.item: difference(c, by_identity[c.item], reader)
            for c in exporter.restored_content(artifacts, reader, RestoreRequest(to=target.address))}


def test_kv_versions_record_is_compared_by_version_whatever_the_plan_says_now(
        harness, openbao_source, openbao_target, tmp_path, age_keys):
    keys, recipient = age_keys
    done = backup(harness, options(openbao_source, tmp_path, kv_metadata="versions"), tmp_path, recipient)
    kv = json.loads(_plain(harness, done.by_identity()[CONFIG]))["kv"]["secret/"]
    db = kv["secrets"]["apps/billing/db"]  # OpenBao lists them with the folder (detailed-metadata)
    assert kv["metadata"] == "versions" and db["current_version"] == 2 and sorted(db["versions"]) == ["1", "2"]
    assert kv["secrets"]["platform/registry"]["current_version"] == 1
    # the plan now says paths: the restore still reads the target's versions, as the record holds them
    opts = options(openbao_source, tmp_path, kv_metadata="paths")
    restored = harness.restore(VaultExporter, opts, done.artifacts, identities=keys, to=openbao_target.address,
                               remap=target_files(tmp_path, openbao_target, openbao_source.unseal_keys))
    assert statuses(restored) == {SNAPSHOT: OutcomeStatus.RESTORED, CONFIG: OutcomeStatus.RESTORED}, restored
    assert f"{len(kv['secrets'])} KV paths read back at their recorded versions" in restored[0].reason
    openbao_target.client(openbao_source.root_token).secrets.kv.v2.create_or_update_secret(
        "apps/billing/db", secret={"password": "s3cret-3"}, mount_point="secret")
    again = harness.restore(VaultExporter, opts, done.artifacts, identities=keys, to=openbao_target.address)
    assert statuses(again)[SNAPSHOT] == OutcomeStatus.CONFLICT  # version 3 is not the record's 2
    assert "KV path secret/apps/billing/db at version 3, the snapshot's at 2" in again[0].reason


def test_changing_kv_metadata_records_the_configuration_again(harness, openbao_source, tmp_path, age_keys):
    _, recipient = age_keys
    first = backup(harness, options(openbao_source, tmp_path, kv_metadata="paths"), tmp_path, recipient)
    second = backup(harness, options(openbao_source, tmp_path, kv_metadata="versions"), tmp_path, recipient,
                    parent=first.artifacts)
    assert second.stats["artifacts_reused"] == 1  # the snapshot; the record now holds more
    kv = json.loads(_plain(harness, second.by_identity()[CONFIG]))["kv"]["secret/"]
    assert kv["metadata"] == "versions"


# Like HashiCorp Vault's KV, which has no detailed-metadata listing: versions only one GET a secret
METADATA_ONLY = """
path "sys/mounts" { capabilities = ["read"] }
path "secret/metadata" { capabilities = ["list"] }
path "secret/metadata/*" { capabilities = ["read", "list"] }
path "sys/storage/raft/snapshot" { capabilities = ["read"] }
"""


def test_without_a_detailed_listing_versions_are_read_one_secret_at_a_time(harness, openbao_source, tmp_path,
                                                                           age_keys):
    _, recipient = age_keys
    root = openbao_source.client()
    root.sys.create_or_update_policy("kv-metadata-only", METADATA_ONLY)
    token = root.auth.token.create(policies=["kv-metadata-only"])["auth"]["client_token"]
    done = backup(harness, options(openbao_source, tmp_path, token=token, kv_metadata="versions"), tmp_path,
                  recipient)
    kv = json.loads(_plain(harness, done.by_identity()[CONFIG]))["kv"]["secret/"]
    assert kv["metadata"] == "versions" and {"apps/billing/db", "platform/registry"} <= set(kv["secrets"])
    # read concurrently, one GET a secret: every entry is its own secret's
    assert kv["secrets"]["apps/billing/db"]["current_version"] == 2
    assert kv["secrets"]["platform/registry"]["current_version"] == 1
    assert all(entry["current_version"] >= 1 for entry in kv["secrets"].values())


def test_record_is_one_secret_a_line_and_reads_back_whole():
    from dr.exporters.vault.configuration import render

    document = {"mounts": {"secret/": {"type": "kv"}}, "kv": {
        "secret/": {"version": 2, "metadata": "versions", "secrets": {
            "b/x": {"current_version": 2, "versions": {"1": {"destroyed": False}}}, "a": {}}},
        "old/": {"version": 1, "secrets": {}}, "denied/": {"unreadable": "permission denied"}}}
    text = render(document).decode()
    assert json.loads(text) == document
    assert '    "b/x": {"current_version": 2, "versions": {"1": {"destroyed": false}}}\n' in text


def _plain(harness, artifact) -> bytes:
    from dr.repository.reading import ArtifactReader

    return ArtifactReader(harness.repo).read(artifact)


def test_unchanged_vault_is_not_read_again(harness, openbao_source, tmp_path, age_keys):
    _, recipient = age_keys
    opts = options(openbao_source, tmp_path)
    first = backup(harness, opts, tmp_path, recipient)
    second = backup(harness, opts, tmp_path, recipient, parent=first.artifacts)
    assert second.stats["artifacts_reused"] == 2 and second.stats["bytes_read"] == 0
    openbao_source.client().secrets.kv.v2.create_or_update_secret("apps/new", secret={"k": "v"},
                                                                  mount_point="secret")
    third = backup(harness, opts, tmp_path, recipient, parent=second.artifacts)
    assert third.stats["artifacts_reused"] == 0
    assert "apps/new" in json.loads(_plain(harness, third.by_identity()[CONFIG]))["kv"]["secret/"]["secrets"]


def test_restore_into_a_non_empty_vault_needs_overwrite(harness, openbao_source, openbao_target, tmp_path,
                                                        age_keys):
    keys, recipient = age_keys
    opts = options(openbao_source, tmp_path)
    done = backup(harness, opts, tmp_path, recipient)
    openbao_target.client().sys.enable_secrets_engine("kv", path="team", options={"version": "2"})
    remap = target_files(tmp_path, openbao_target, openbao_source.unseal_keys)
    refused = harness.restore(VaultExporter, opts, done.artifacts, identities=keys, to=openbao_target.address,
                              remap=remap)
    assert statuses(refused)[SNAPSHOT] == OutcomeStatus.CONFLICT
    assert "mount team/" in refused[0].reason and "--overwrite" in refused[0].reason
    assert "team/" in openbao_target.client().sys.list_mounted_secrets_engines()["data"]  # untouched
    forced = harness.restore(VaultExporter, opts, done.artifacts, identities=keys, to=openbao_target.address,
                             remap=remap, overwrite=True)
    assert statuses(forced) == {SNAPSHOT: OutcomeStatus.RESTORED, CONFIG: OutcomeStatus.RESTORED}, forced
    assert "replacing what it held (mount team/)" in forced[0].reason
    assert "with the original unseal keys" in forced[0].reason
    # every recorded path was read back from the restored Vault
    paths = len(json.loads(_plain(harness, done.by_identity()[CONFIG]))["kv"]["secret/"]["secrets"])
    assert f"{paths} KV paths read back" in forced[0].reason
    assert read_kv(openbao_target, openbao_source.root_token) == read_kv(openbao_source)


def test_flipped_byte_in_the_stored_snapshot_is_caught_before_sending(harness, openbao_source, openbao_target,
                                                                     tmp_path, age_keys):
    keys, recipient = age_keys
    opts = options(openbao_source, tmp_path)
    done = backup(harness, opts, tmp_path, recipient)
    snap = done.by_identity()[SNAPSHOT]
    blob = harness.blob_path(snap.chunks[-1])
    raw = bytearray(open(blob, "rb").read())
    raw[len(raw) // 2] ^= 0x01
    os.chmod(blob, 0o644)
    open(blob, "wb").write(bytes(raw))
    outcomes = harness.restore(VaultExporter, opts, done.artifacts, identities=keys, to=openbao_target.address,
                               remap=target_files(tmp_path, openbao_target, openbao_source.unseal_keys))
    assert statuses(outcomes)[SNAPSHOT] == OutcomeStatus.FAILED
    assert "IntegrityError" in outcomes[0].reason and "nothing was sent" in outcomes[0].reason
    target = openbao_target.client()  # its own root token still works: nothing was restored
    assert sorted(target.sys.list_mounted_secrets_engines()["data"]) == ["cubbyhole/", "identity/", "sys/"]


def test_sealed_vault_is_a_failed_source(harness, tmp_path, age_keys):
    _, recipient = age_keys
    with OpenBao("openbao-sealed") as bao:
        bao.seal()
        with pytest.raises(VaultUnavailable, match="is sealed"):
            backup(harness, options(bao, tmp_path), tmp_path, recipient)
    assert harness.repo.snapshot_ids() == []


def test_wrong_token_is_refused_and_never_shown(harness, openbao_source, tmp_path, age_keys):
    _, recipient = age_keys
    with pytest.raises(VaultAuthFailed, match="refused the token from the token file") as caught:
        backup(harness, options(openbao_source, tmp_path, token="hvs.not-a-real-token"), tmp_path, recipient)
    assert "not-a-real-token" not in str(caught.value)


@pytest.mark.parametrize("mode", ["drop", "clean"])
def test_snapshot_cut_off_mid_stream_is_never_an_artifact(harness, openbao_source, tmp_path, age_keys, mode):
    _, recipient = age_keys
    with CuttingProxy(openbao_source.address, keep=3000, mode=mode) as proxy:
        with pytest.raises(SnapshotDamaged, match="broke after|ends early"):
            backup(harness, options(openbao_source, tmp_path, address=proxy.address), tmp_path, recipient)
    assert harness.repo.snapshot_ids() == []


def test_approle_login_backs_up_and_revokes_its_token(harness, openbao_source, tmp_path, age_keys):
    _, recipient = age_keys
    root = openbao_source.client()
    root.sys.create_or_update_policy("dr-backup", 'path "*" { capabilities = ["read", "list", "sudo"] }')
    root.auth.approle.create_or_update_approle("dr-backup", token_policies=["dr-backup"])
    role_id = root.auth.approle.read_role_id("dr-backup")["data"]["role_id"]
    secret_id = root.auth.approle.generate_secret_id("dr-backup")["data"]["secret_id"]
    (tmp_path / "secret-id").write_text(secret_id)
    opts = {**options(openbao_source, tmp_path),
            "auth": {"method": "approle", "role_id": role_id, "secret_id_file": str(tmp_path / "secret-id")}}
    tokens_before = root.adapter.list("/v1/auth/token/accessors")["data"]["keys"]
    done = backup(harness, opts, tmp_path, recipient)
    assert {a.identity for a in done.artifacts} == {SNAPSHOT, CONFIG}
    assert root.adapter.list("/v1/auth/token/accessors")["data"]["keys"] == tokens_before  # revoked


def test_unseal_dependencies_name_kms_region_and_transit_vault(tmp_path):
    from dr.exporters.vault.unsealing import unseal_dependencies

    def deps(unseal):
        return [(d.kind, d.reference) for d in unseal_dependencies(VaultExporter.Options(
            address="https://vault.example", auth={"method": "token", "token_env": "T"}, unseal=unseal))]

    assert deps({"type": "awskms", "key_id": "mrk-1234", "region": "us-east-1"}) == [
        ("unseal-kms", "https://kms.us-east-1.amazonaws.com/mrk-1234")]
    assert deps({"type": "transit", "address": "http://vault.vault.svc.cluster.local:8200",
                 "key_name": "autounseal"}) == [
        ("unseal-transit", "http://vault.vault.svc.cluster.local:8200/v1/transit/keys/autounseal")]


def test_chosen_key_names_are_sealed_and_key_ids_and_aws_managed_aliases_kept():
    """format.md 8.1 (dr.repository.key_names): what people chose is sealed, what is random
    or names only an AWS service stays."""
    from dr.exporters.vault.unsealing import unseal_dependencies

    def refs(unseal):
        sealed: list[str] = []
        found = [d.reference for d in unseal_dependencies(VaultExporter.Options(
            address="https://vault.example", auth={"method": "token", "token_env": "T"}, unseal=unseal),
            seal=lambda name: f"<{name}>", sealed=sealed)]
        return found, sealed

    kms = "https://kms.us-east-1.amazonaws.com/"
    awskms = {"type": "awskms", "region": "us-east-1"}
    assert refs({**awskms, "key_id": "alias/payments-db"}) == ([kms + "<alias/payments-db>"], ["alias/payments-db"])
    assert refs({**awskms, "key_id": "arn:aws:kms:us-east-1:111122223333:alias/payments-db"}) == (
        [kms + "<arn:aws:kms:us-east-1:111122223333:alias/payments-db>"],
        ["arn:aws:kms:us-east-1:111122223333:alias/payments-db"])
    for kept in ("mrk-1234", "1234abcd-12ab-34cd-56ef-1234567890ab", "alias/aws/secretsmanager",
                 "arn:aws:kms:us-east-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab"):
        assert refs({**awskms, "key_id": kept}) == ([kms + kept], [])
    assert refs({"type": "transit", "address": "https://other-vault:8200", "key_name": "autounseal"}) == (
        ["https://other-vault:8200/v1/transit/keys/<autounseal>"], ["autounseal"])


@pytest.mark.parametrize("bad", [
    {"auth": {"method": "token"}},  # neither file nor env
    {"auth": {"method": "token", "token_env": "A", "token_file": "f"}},
    {"unseal": {"type": "shamir", "custodians": ["a"], "threshold": 2}},
    {"address": "https://user:pw@vault.example"},
    {"unseal": {"type": "awskms", "key_id": "k"}},  # no region
    {"kv_metadata": "values"},  # values are never recorded
])
def test_options_rejected(bad):
    good = {"address": "https://vault.example", "auth": {"method": "token", "token_env": "T"},
            "unseal": {"type": "shamir", "custodians": ["a", "b"], "threshold": 2}}
    with pytest.raises(ValueError):
        VaultExporter.Options(**{**good, **bad})


@pytest.fixture
def kms_keys(aws_env, moto_endpoint):
    """moto KMS: a multi-region key (primary us-east-1, replica eu-west-1) and a single-region one."""
    import boto3

    kms = boto3.client("kms", region_name="us-east-1", endpoint_url=moto_endpoint)
    multi = kms.create_key(MultiRegion=True, Description="vault unseal")["KeyMetadata"]["KeyId"]
    kms.replicate_key(KeyId=multi, ReplicaRegion="eu-west-1")
    single = kms.create_key(Description="vault unseal, one region")["KeyMetadata"]["KeyId"]
    return {"endpoint": moto_endpoint, "multi": multi, "single": single}


def _awskms(key_id: str, endpoint: str) -> dict:
    return {"type": "awskms", "key_id": key_id, "region": "us-east-1", "endpoint_url": endpoint}


def test_multi_region_unseal_key_records_every_replica_region_as_one_any_of_need(
        harness, openbao_source, tmp_path, age_keys, kms_keys):
    """The OpenBao here is Shamir-sealed (an awskms seal needs a KMS the server reaches at start,
    which this test does not run): the plan's unseal option says awskms, and the key it names is
    a real multi-region key in moto KMS, read with DescribeKey at backup time."""
    _, recipient = age_keys
    multi = kms_keys["multi"]
    opts = options(openbao_source, tmp_path, unseal=_awskms(multi, kms_keys["endpoint"]))
    done = backup(harness, opts, tmp_path, recipient)
    snap = done.by_identity()[SNAPSHOT]
    refs = [d.reference for d in snap.dependencies if d.kind == "unseal-kms"]
    assert refs == [f"https://kms.us-east-1.amazonaws.com/{multi}", f"https://kms.eu-west-1.amazonaws.com/{multi}"]
    exporter = VaultExporter(ExportContext("src", VaultExporter.Options(**opts), str(tmp_path)))
    [need] = exporter.restore_needs(done.artifacts)
    assert need.kind == "unseal-kms" and need.references == tuple(refs)


def test_single_region_unseal_key_stays_one_dependency(harness, openbao_source, tmp_path, age_keys, kms_keys):
    _, recipient = age_keys
    single = kms_keys["single"]
    opts = options(openbao_source, tmp_path, unseal=_awskms(single, kms_keys["endpoint"]))
    done = backup(harness, opts, tmp_path, recipient)
    snap = done.by_identity()[SNAPSHOT]
    assert [d.reference for d in snap.dependencies] == [f"https://kms.us-east-1.amazonaws.com/{single}"]
    exporter = VaultExporter(ExportContext("src", VaultExporter.Options(**opts), str(tmp_path)))
    [need] = exporter.restore_needs(done.artifacts)  # one reference: losing us-east-1 is a blocker
    assert need.references == (f"https://kms.us-east-1.amazonaws.com/{single}",)


def test_unreadable_unseal_key_is_a_finding_and_the_configured_region_is_kept(
        harness, openbao_source, tmp_path, age_keys, kms_keys):
    _, recipient = age_keys
    opts = options(openbao_source, tmp_path, unseal=_awskms("mrk-does-not-exist", kms_keys["endpoint"]))
    done = backup(harness, opts, tmp_path, recipient)
    assert [d.reference for d in done.by_identity()[SNAPSHOT].dependencies] == [
        "https://kms.us-east-1.amazonaws.com/mrk-does-not-exist"]
    [finding] = [f for f in done.findings if f["code"] == "vault-unseal-key-unreadable"]
    assert finding["severity"] == "warning" and "NotFoundException" in finding["message"]


def test_a_chosen_key_alias_is_sealed_in_the_snapshots_dependencies(harness, openbao_source, tmp_path, age_keys,
                                                                      kms_keys):
    """format.md 8.1: the snapshot is a secret artifact, and an alias is chosen by people (it may
    say what the key protects), so its dependency names the alias by its keyed digest; the host
    (the key's region) stays, and so does a key's id. The sealed meta lists the alias."""
    import boto3

    _, recipient = age_keys
    alias = f"alias/unseal-canary-{uuid.uuid4().hex[:8]}"
    kms = boto3.client("kms", region_name="us-east-1", endpoint_url=kms_keys["endpoint"])
    kms.create_alias(AliasName=alias, TargetKeyId=kms_keys["single"])
    opts = options(openbao_source, tmp_path, unseal=_awskms(alias, kms_keys["endpoint"]))
    snap = backup(harness, opts, tmp_path, recipient).by_identity()[SNAPSHOT]
    digest = names.keyed(names.plan_name_key([recipient]), f"name\x00{alias}")
    assert [d.reference for d in snap.dependencies] == [f"https://kms.us-east-1.amazonaws.com/{digest}"]
    assert snap.meta[names.SEALED_NAMES] == [alias]  # read back with the identity
    missing = f"alias/missing-canary-{uuid.uuid4().hex[:8]}"
    opts = options(openbao_source, tmp_path, unseal=_awskms(missing, kms_keys["endpoint"]))
    done = backup(harness, opts, tmp_path, recipient)
    [finding] = [f for f in done.findings if f["code"] == "vault-unseal-key-unreadable"]
    assert missing not in json.dumps(finding) and "NotFoundException" in finding["message"]
    assert "hmac-sha256:" in finding["message"]


def test_record_lists_every_folder_and_policy_read_a_few_at_once(harness, openbao_source, tmp_path, age_keys):
    """Folders of one depth and the policies are read concurrently: the record must still hold
    every path exactly once, and each policy its own text, not another's answer."""
    _, recipient = age_keys
    root = openbao_source.client()
    planted = ["walk/a", "walk/a-b", "walk/a/x/y", "walk/a/x/z", "walk/a0", "walk/z/1", "walk/b/c/d/e"]
    for path in planted:
        root.secrets.kv.v2.create_or_update_secret(path, secret={"k": path}, mount_point="secret")
    policies = {f"walk-{n:02d}": f'path "walk/{n:02d}/*" {{ capabilities = ["read"] }}' for n in range(12)}
    for name, text in policies.items():
        root.sys.create_or_update_policy(name, text)
    done = backup(harness, options(openbao_source, tmp_path), tmp_path, recipient)
    record = json.loads(_plain(harness, done.by_identity()[CONFIG]))
    paths = [p for p in record["kv"]["secret/"]["secrets"] if p.startswith("walk/")]
    assert paths == sorted(planted)
    assert {name: record["policies"][name] for name in policies} == policies
