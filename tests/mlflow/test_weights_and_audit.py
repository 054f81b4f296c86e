"""Weights: where they are (dependencies the audit places), DR copies (copy_artifacts) that
make the audit say "remapped", `dr verify` finding a damaged copy, and a restore pointing
versions at their copies. Through dr's real entry point and a real plan."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from dr.cli.exitcodes import Exit
from dr.cli.main import main
from tests.cli.planfiles import local_target
from tests.mlflow.registries import Rest, build_registry
from tests.fixtures_s3 import s3_client

PLAN = """version: 1
name: mlflow-test
failure_domains:
  - name: cloud
    kind: provider
    children:
      - {{name: region-a, kind: region}}
      - {{name: region-b, kind: region}}
protects_against: [region-a]
locations:
  - {{name: weights, domain: region-a, kind: bucket, prefixes: ["s3://{bucket}/"]}}
  - {{name: run-artifacts, domain: region-a, kind: path, prefixes: ["file://"]}}
  - {{name: registry, domain: region-a, kind: mlflow, prefixes: ["{url}"]}}
  - {{name: dr-weights, domain: region-b, kind: path, prefixes: ["{copies}"]}}
targets:
  - {target}
sources:
  - name: registry
    type: mlflow
    tracking_uri: "{url}"
    s3_endpoint_url: "{endpoint}"
{extra}"""


def write_plan(tmp_path: Path, src: dict, extra: str = "") -> str:
    path = tmp_path / "plan.yaml"
    path.write_text(PLAN.format(bucket=src["bucket"], url=src["url"], endpoint=src["endpoint"],
                                copies=str(tmp_path / "copies"), target=local_target(tmp_path / "repo"),
                                extra=extra))
    return str(path)


COPY_CHAMPIONS = """    copy_artifacts: true
    copy_to: "{copies}"
    copy_only: ["@champion"]
"""


def audit(plan: str, capsys) -> tuple[int, list[dict]]:
    capsys.readouterr()
    code = main(["audit", "--plan", plan, "--failed", "region-a", "--json", "-q"])
    return code, json.loads(capsys.readouterr().out)["findings"]


def by_reference(findings: list[dict]) -> dict[str, str]:
    return {f["reference"]: f["severity"] for f in findings}


def test_champion_weights_only_in_the_failed_region_block_until_copied(mlflow_source, aws_env, tmp_path, capsys):
    plan = write_plan(tmp_path, mlflow_source)
    assert main(["backup", "--plan", plan, "-q"]) == Exit.OK
    code, findings = audit(plan, capsys)
    champion = f"s3://{mlflow_source['bucket']}/fraud/v3"
    assert code == Exit.BLOCKERS and by_reference(findings)[champion] == "blocker"

    plan = write_plan(tmp_path, mlflow_source, COPY_CHAMPIONS.format(copies=tmp_path / "copies"))
    assert main(["backup", "--plan", plan, "-q"]) == Exit.OK
    copy = tmp_path / "copies" / "registry" / "fraud-detector" / "v3"
    assert (copy / "files" / "model.safetensors").read_bytes() == b"fraud/v3" * 1000
    assert (copy / "dr-complete").exists() and (copy / "dr-manifest.json").exists()
    _, findings = audit(plan, capsys)
    seen = by_reference(findings)
    assert seen[champion] == "info"  # remapped: the DR copy in region-b brings it back
    assert seen[f"s3://{mlflow_source['bucket']}/fraud/v4"] == "blocker"  # the challenger was not copied
    remapped = next(f for f in findings if f["reference"] == champion)
    assert "remap" in remapped["code"] or "remap" in remapped["message"].lower()


def test_verify_finds_a_damaged_copy_and_restore_refuses_it(mlflow_source, aws_env, tmp_path, capsys, new_mlflow):
    plan = write_plan(tmp_path, mlflow_source, COPY_CHAMPIONS.format(copies=tmp_path / "copies"))
    assert main(["backup", "--plan", plan, "-q"]) == Exit.OK
    assert main(["verify", "--plan", plan, "--read-data", "-q"]) == Exit.OK
    assert main(["status", "--plan", plan, "--read-data", "-q"]) == Exit.OK
    weights = tmp_path / "copies" / "registry" / "fraud-detector" / "v3" / "files" / "model.safetensors"
    data = bytearray(weights.read_bytes())
    data[10] ^= 1
    weights.write_bytes(bytes(data))  # same size: only reading the data finds it
    capsys.readouterr()
    assert main(["verify", "--plan", plan, "--read-data"]) == Exit.INTEGRITY
    said = capsys.readouterr()
    assert "model.safetensors: content differs from its recorded SHA-256" in said.out + said.err
    # dr status reads the same copies the same way: the damaged one is a lost recovery point
    assert main(["status", "--plan", plan, "--read-data"]) == Exit.RPO_BREACH
    said = capsys.readouterr()
    assert "BREACH" in said.out and "model.safetensors: content differs" in said.out
    weights.write_bytes(bytes(data[:-5]))  # truncated: a restore's own check finds it
    to = new_mlflow()
    capsys.readouterr()
    code = main(["restore", "--plan", plan, "--source", "registry", "--to", to, "--sources-from-copies", "--json"])
    out = capsys.readouterr().out
    assert code == Exit.PARTIAL, out
    assert "DR copy unusable" in out and "model.safetensors" in out
    v3 = Rest(to).get("/model-versions/get", name="fraud-detector", version="3")["model_version"]
    assert v3["source"] == f"s3://{mlflow_source['bucket']}/fraud/v3"  # not pointed at a damaged copy


def test_restore_points_versions_at_their_copies(mlflow_source, aws_env, tmp_path, capsys, new_mlflow, moto_endpoint_b):
    """S3 copies (on another server: another region): MLflow refuses local paths as sources
    (unless under the version's run's artifact directory), so a directory copy cannot be."""
    dr_bucket = "mlflow-weights-dr"
    s3_client(moto_endpoint_b).create_bucket(Bucket=dr_bucket)
    extra = (f"    copy_artifacts: true\n    copy_to: s3://{dr_bucket}/copies\n"
             f"    copy_s3_endpoint_url: \"{moto_endpoint_b}\"\n    copy_only: [\"@champion\"]\n")
    plan = write_plan(tmp_path, mlflow_source, extra)
    assert main(["backup", "--plan", plan, "-q"]) == Exit.OK
    to = new_mlflow()
    assert main(["restore", "--plan", plan, "--source", "registry", "--to", to, "--sources-from-copies", "-q"]) == Exit.OK
    v3 = Rest(to).get("/model-versions/get", name="fraud-detector", version="3")["model_version"]
    assert v3["source"] == f"s3://{dr_bucket}/copies/registry/fraud-detector/v3/files"
    tags = {t["key"]: t["value"] for t in v3["tags"]}
    assert tags["dr.source_uri"] == f"s3://{mlflow_source['bucket']}/fraud/v3"
    got = s3_client(moto_endpoint_b).get_object(Bucket=dr_bucket, Key="copies/registry/fraud-detector/v3/files/model.safetensors")
    assert got["Body"].read() == b"fraud/v3" * 1000
    v4 = Rest(to).get("/model-versions/get", name="fraud-detector", version="4")["model_version"]
    assert v4["source"] == f"s3://{mlflow_source['bucket']}/fraud/v4"  # no copy: as it was


def test_gone_weights_are_a_finding_and_the_rest_is_copied(new_mlflow, moto_endpoint, aws_env, tmp_path, capsys):
    url, bucket = new_mlflow(), "mlflow-weights-gone"
    s3 = s3_client(moto_endpoint)
    s3.create_bucket(Bucket=bucket)
    build_registry(url, bucket, s3=s3)
    for key in ("fraud/v4/MLmodel", "fraud/v4/model.safetensors"):
        s3.delete_object(Bucket=bucket, Key=key)
    src = {"bucket": bucket, "url": url, "endpoint": moto_endpoint}
    plan = write_plan(tmp_path, src, f"    copy_artifacts: true\n    copy_to: \"{tmp_path / 'copies'}\"\n")
    capsys.readouterr()
    code = main(["backup", "--plan", plan, "--json"])
    out = capsys.readouterr().out
    assert code == Exit.PARTIAL and "mlflow-weights-copy-failed" in out and "fraud/v4" in out
    copied = sorted(p.parent.name for p in (tmp_path / "copies").rglob("dr-complete"))
    assert copied == ["v1", "v1", "v1", "v3"] and not os.path.exists(tmp_path / "copies" / "registry" / "fraud-detector" / "v4" / "dr-complete")
    assert main(["snapshots", "--plan", plan, "-q"]) == Exit.OK


pytestmark = pytest.mark.slow
