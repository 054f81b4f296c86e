"""`dr verify --type images`: the image copies alone, by digest, through the CLI against real registries
(`--images`, its deprecated spelling, too)."""

from __future__ import annotations

import json
import os

import yaml

from dr.cli.exitcodes import Exit
from dr.cli.main import main


def _plan(tmp_path, sources: list[dict]) -> str:
    data = {"version": 1, "name": "verify-images",
            "failure_domains": [{"name": "cluster-a", "kind": "cluster"}, {"name": "dr-site", "kind": "site"}],
            "protects_against": ["cluster-a"],
            "targets": [{"name": "dr", "url": str(tmp_path / "repo"), "domain": "dr-site"}],
            "sources": sources}
    (tmp_path / "data").mkdir(exist_ok=True)
    (tmp_path / "data" / "a.txt").write_text("a")
    path = tmp_path / "plan.yaml"
    path.write_text(yaml.safe_dump(data))
    return str(path)


def _verify(capsys, plan: str, *extra: str) -> tuple[int, dict, str]:
    capsys.readouterr()
    code = main(["verify", "--plan", plan, "--type", "images", "--json", *extra])
    captured = capsys.readouterr()
    return code, json.loads(captured.out), captured.err


def test_verify_images_checks_the_registry_copies_and_finds_a_corrupt_layer(tmp_path, capsys, registries, images):
    images_source = {"name": "images", "type": "images", "retry_wait_seconds": 0.01,
                     "to": [f"{registries.dr.url}/verify-cli"], "images": [images.api]}
    plan = _plan(tmp_path, [{"name": "config", "type": "files", "paths": [str(tmp_path / "data")]}, images_source])
    assert main(["backup", "--plan", plan, "--quiet"]) == Exit.OK

    code, document, _ = _verify(capsys, plan, "--read-data")
    assert code == Exit.OK and document["ok"] and document["scope"] == "images"
    [copies] = document["outside_copies"]
    assert copies["source"] == "images" and [c["ok"] for c in copies["copies"]] == [True]

    layer = _largest_layer(registries, images.api)
    data = registries.dr.root / "data" / "docker/registry/v2/blobs/sha256" / layer[7:9] / layer[7:] / "data"
    os.chmod(data, 0o644)
    original = data.read_bytes()
    data.write_bytes(b"x" + original[1:])
    try:
        code, document, _ = _verify(capsys, plan, "--read-data")
        assert code == Exit.INTEGRITY and not document["ok"]
        assert layer in json.dumps(document["outside_copies"])
        quick, _, _ = _verify(capsys, plan)  # sizes only: the same-size damage needs --read-data
        assert quick == Exit.OK
    finally:  # the registry's blob store is shared by every test of the session
        data.write_bytes(original)


def _largest_layer(registries, reference: str) -> str:
    path, tag = reference.split("/", 1)[1].rsplit(":", 1)
    manifest = json.loads(registries.source.client().get_manifest(path, tag).body)
    return max(manifest["layers"], key=lambda layer: layer["size"])["digest"]


def test_verify_images_without_an_images_source_is_a_usage_error(tmp_path, capsys):
    plan = _plan(tmp_path, [{"name": "config", "type": "files", "paths": [str(tmp_path / "data")]}])
    assert main(["backup", "--plan", plan, "--quiet"]) == Exit.OK
    capsys.readouterr()
    assert main(["verify", "--plan", plan, "--type", "images"]) == Exit.USAGE
    err = capsys.readouterr().err
    assert "no source of type images (its sources' types: files)" in err and "Traceback" not in err


def test_verify_images_says_which_images_source_no_snapshot_holds(tmp_path, capsys, registries, images):
    files = {"name": "config", "type": "files", "paths": [str(tmp_path / "data")]}
    plan = _plan(tmp_path, [files, {"name": "images", "type": "images", "to": [f"{registries.dr.url}/never"],
                                    "images": [images.api]}])
    assert main(["backup", "--plan", plan, "--source", "config", "--quiet"]) == Exit.OK
    code, document, err = _verify(capsys, plan)
    assert code == Exit.OK and document["nothing_to_verify"] == ["images"]
    assert "images: no copy outside the repository recorded in any snapshot" in err
    capsys.readouterr()
    assert main(["verify", "--plan", plan, "--images", "--json"]) == Exit.OK  # the old spelling, for one release
    captured = capsys.readouterr()
    assert json.loads(captured.out)["scope"] == "images"
    assert "dr verify --images is deprecated and will be removed in the next release: use --type images" in captured.err


def test_verify_images_writes_no_whole_verify_metrics(tmp_path, capsys, registries, images):
    """dr_verify_last_run_timestamp_seconds of a partial check would satisfy an alert on the full one."""
    plan = _plan(tmp_path, [{"name": "images", "type": "images", "to": [f"{registries.dr.url}/metrics"],
                             "images": [images.api]}])
    assert main(["backup", "--plan", plan, "--quiet"]) == Exit.OK
    capsys.readouterr()
    metrics = tmp_path / "verify.prom"
    assert main(["verify", "--plan", plan, "--type", "images", "--metrics-file", str(metrics)]) == Exit.USAGE
    assert "no dr_verify_* metrics" in capsys.readouterr().err and not metrics.exists()
