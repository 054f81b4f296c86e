"""Secret material never reaches a repository in plaintext: plant canaries, scan every byte.

Runs `dr backup` for real against a local repository and against S3 (moto over HTTP), then
reads back every stored object and searches it for each canary in raw, base64 and hex form.
"""

from __future__ import annotations

import base64
import os

import boto3

from dr.cli.main import main
from tests.cli.planfiles import files_source, key_pair, local_target, s3_target, write_plan

CANARIES = [b"CANARY-db-password-7f3a9c", b"AKIAZZZZCANARY0000001", b"-----BEGIN CANARY PRIVATE KEY-----"]


def _plant(root) -> str:
    secrets_dir = os.path.join(str(root), "secrets")
    os.makedirs(os.path.join(secrets_dir, "nested"))
    for i, canary in enumerate(CANARIES):
        with open(os.path.join(secrets_dir, "nested" if i else "", f"s{i}.txt"), "wb") as handle:
            handle.write(b"prefix " * 50 + canary + b" suffix\n")
    big = os.path.join(secrets_dir, "big.bin")  # spans two chunks, canary at the boundary
    with open(big, "wb") as handle:
        handle.write(os.urandom((8 << 20) - 10) + CANARIES[0] + os.urandom(100))
    return secrets_dir


def _forms(canary: bytes) -> list[bytes]:
    return [canary, base64.b64encode(canary)[:-4], canary.hex().encode(), canary.hex().upper().encode()]


def _assert_clean(blobs: list[bytes]) -> None:
    assert blobs, "nothing stored: the scan would prove nothing"
    for data in blobs:
        for canary in CANARIES:
            for form in _forms(canary):
                assert form not in data


def test_no_canary_reaches_a_local_repository(tmp_path, capsys):
    identity, recipient = key_pair(tmp_path)
    secrets_dir = _plant(tmp_path)
    repo = tmp_path / "repo"
    plan = write_plan(tmp_path / "plan.yaml", local_target(repo), files_source("vault-keys", [secrets_dir], secret=True),
                      [recipient])
    assert main(["backup", "--plan", plan]) == 0
    stored = [p.read_bytes() for p in repo.rglob("*") if p.is_file()]
    _assert_clean(stored)
    output = capsys.readouterr()
    _assert_clean([output.out.encode() + output.err.encode()] + stored)
    # and the content is recoverable with the private key only
    assert main(["restore", "--plan", plan, "--source", "vault-keys", "--to", str(tmp_path / "out")]) != 0
    assert main(["restore", "--plan", plan, "--source", "vault-keys", "--to", str(tmp_path / "out2"),
                 "--identity", identity]) == 0
    assert CANARIES[1] in (tmp_path / "out2" / "secrets" / "nested" / "s1.txt").read_bytes()
    capsys.readouterr()
    (tmp_path / "other").mkdir()
    other_identity, _ = key_pair(tmp_path / "other")  # a key the content was not encrypted to
    assert main(["restore", "--plan", plan, "--source", "vault-keys", "--to", str(tmp_path / "out3"),
                 "--identity", other_identity]) == 1  # names sealed too (format.md 8.1): no file, no directory
    output = capsys.readouterr()
    assert "none of the given identities is a recipient" in output.out + output.err
    assert "Traceback" not in output.err
    assert not (tmp_path / "out3").exists()  # nothing half-restored, not even the --to directory


def test_no_canary_reaches_an_s3_repository(tmp_path, s3_bucket, moto_endpoint):
    _, recipient = key_pair(tmp_path)
    secrets_dir = _plant(tmp_path)
    bucket = s3_bucket(region="eu-west-1")
    plan = write_plan(tmp_path / "plan.yaml", s3_target(bucket, moto_endpoint),
                      files_source("vault-keys", [secrets_dir], secret=True), [recipient])
    assert main(["backup", "--plan", plan, "--quiet"]) == 0
    s3 = boto3.client("s3", endpoint_url=moto_endpoint, region_name="eu-west-1")
    keys = [o["Key"] for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket)
            for o in page.get("Contents", [])]
    _assert_clean([s3.get_object(Bucket=bucket, Key=k)["Body"].read() for k in keys])
