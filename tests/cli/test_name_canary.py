"""Names inside a secret source are as secret as its content (docs/format.md 8.1).

Canaries in a directory name, a file name and a symlink target of a secret-class `files`
source: `dr backup` twice, then every stored byte is searched (every version of every object
in S3), the second backup must upload nothing, and a restore with the identity brings back the
exact names and link target.
"""

from __future__ import annotations

import base64
import gzip
import json
import os

import boto3

from dr.cli.main import main
from tests.cli.planfiles import files_source, key_pair, local_target, s3_target, write_plan

DIR, FILE, TARGET = "dircanary-5e1b7a", "filecanary-93d0c4.key", "linkcanary-2a77f1"


def _plant(root) -> str:
    secrets = os.path.join(str(root), "secrets")
    os.makedirs(os.path.join(secrets, DIR))
    with open(os.path.join(secrets, DIR, FILE), "wb") as handle:
        handle.write(b"the content is encrypted already\n")
    os.symlink(f"../{TARGET}/{FILE}", os.path.join(secrets, DIR, "current"))
    return secrets


def _forms(text: str) -> list[bytes]:
    raw = text.encode()
    forms = [raw, raw.hex().encode(), raw.hex().upper().encode()]
    for shift in range(3):  # base64 of the canary at any offset holds one of these
        forms.append(base64.b64encode(b"\x00" * shift + raw)[4:-4])
    return forms


def assert_clean(objects: list[bytes], canaries=(DIR, FILE, TARGET)) -> None:
    """No canary in any of the objects, raw, in hex or in base64 at any offset (catalogs unzipped)."""
    assert len(objects) >= 4, "too little stored: the scan would prove nothing"
    for data in objects:
        if data[:2] == b"\x1f\x8b":  # a catalog: search its JSON too
            data += gzip.decompress(data)
        for canary in canaries:
            for form in _forms(canary):
                assert form not in data, f"{canary} stored as {form!r}"


def backups(plan: str, capsys) -> list[dict]:
    """The stats of two `dr backup --json` runs of the plan."""
    stats = []
    for _ in range(2):
        assert main(["backup", "--plan", plan, "--json"]) == 0
        stats.append(json.loads(capsys.readouterr().out)["results"][0]["stats"])
    return stats


def _restored_exactly(plan: str, identity: str, out) -> None:
    assert main(["restore", "--plan", plan, "--source", "vault-keys", "--to", str(out), "--identity", identity]) == 0
    folder = out / "secrets" / DIR
    assert sorted(os.listdir(folder)) == sorted(["current", FILE])
    assert (folder / FILE).read_bytes() == b"the content is encrypted already\n"
    assert os.readlink(folder / "current") == f"../{TARGET}/{FILE}"


def test_no_name_reaches_a_local_repository_and_the_second_backup_uploads_nothing(tmp_path, capsys):
    identity, recipient = key_pair(tmp_path)
    repo = tmp_path / "repo"
    plan = write_plan(tmp_path / "plan.yaml", local_target(repo),
                      files_source("vault-keys", [_plant(tmp_path)], secret=True), [recipient])
    first, second = backups(plan, capsys)
    assert first["bytes_uploaded"] > 0 and first["artifacts"] == 4
    assert second["bytes_uploaded"] == 0 and second["blobs_uploaded"] == 0
    assert second["artifacts_reused"] == 4
    assert_clean([p.read_bytes() for p in repo.rglob("*") if p.is_file()])
    assert main(["restore", "--plan", plan, "--source", "vault-keys", "--to", str(tmp_path / "none")]) != 0
    assert not (tmp_path / "none").exists() or not list((tmp_path / "none").rglob("*"))
    capsys.readouterr()
    _restored_exactly(plan, identity, tmp_path / "out")


def test_no_name_reaches_any_version_of_any_s3_object(tmp_path, s3_bucket, moto_endpoint, capsys):
    identity, recipient = key_pair(tmp_path)
    bucket = s3_bucket(region="eu-west-1")
    s3 = boto3.client("s3", endpoint_url=moto_endpoint, region_name="eu-west-1")
    s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
    plan = write_plan(tmp_path / "plan.yaml", s3_target(bucket, moto_endpoint),
                      files_source("vault-keys", [_plant(tmp_path)], secret=True), [recipient])
    assert backups(plan, capsys)[1]["bytes_uploaded"] == 0
    versions = [(v["Key"], v["VersionId"]) for page in s3.get_paginator("list_object_versions").paginate(Bucket=bucket)
                for v in page.get("Versions", [])]
    assert_clean([s3.get_object(Bucket=bucket, Key=k, VersionId=v)["Body"].read() for k, v in versions])
    _restored_exactly(plan, identity, tmp_path / "out")
