"""The issue's "done when", with a pods plugin standing in for the kubernetes exporter: the audit
moves the in-cluster images from blocker to remapped, and a whole-plan restore into the recovery
side points the workloads at the DR copies by digest (meta provides_at, heard through the pods
exporter's own `registry` remap kind: no exporter is named in the core)."""

from __future__ import annotations

import json

import pytest
import yaml

from dr.cli.exitcodes import Exit
from dr.cli.main import main
from tests.harness.registries import push_image
from tests.plugins.installing import install_distribution


@pytest.fixture
def installed(tmp_path, monkeypatch):
    site = tmp_path / "site"
    install_distribution(site, "acme_pods", {"pods": "tests.plugins.acme_pods:PodsExporter"})
    monkeypatch.syspath_prepend(str(site))


def _plan(tmp_path, registries, images, with_images: bool, prefix: str = "whole") -> str:
    (tmp_path / "pods.json").write_text(json.dumps({"api": [images.api], "worker": [images.worker]}))
    sources = [{"name": "pods", "type": "pods", "file": "pods.json"}]
    if with_images:
        sources.append({"name": "images", "type": "images", "to": [f"{registries.dr.url}/{prefix}"]})
    data = {"version": 1, "name": "whole",
            "failure_domains": [{"name": "cluster-a", "kind": "cluster"}, {"name": "dr-site", "kind": "site"}],
            "protects_against": ["cluster-a"],
            "locations": [{"name": "in-cluster-registry", "domain": "cluster-a",
                           "prefixes": [f"{registries.source.host}/"]},
                          {"name": "dr-registry", "domain": "dr-site", "prefixes": [registries.dr.url,
                                                                                   f"{registries.dr.host}/"]}],
            "targets": [{"name": "dr", "url": str(tmp_path / "repo"), "domain": "dr-site"}],
            "sources": sources}
    path = tmp_path / "plan.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return str(path)


def _audit(plan: str, out) -> tuple[int, list[dict]]:
    code = main(["audit", "--plan", plan, "--failed", "cluster-a", "--json", "--out", str(out), "-q"])
    return code, json.loads(out.read_text())["findings"]


def test_images_copied_turn_blockers_into_remapped_and_workloads_point_at_the_copies(
        installed, tmp_path, registries, images, capsys):
    plan = _plan(tmp_path, registries, images, with_images=False)
    assert main(["backup", "--plan", plan, "-q"]) == Exit.OK
    code, findings = _audit(plan, tmp_path / "before.json")
    assert code == Exit.BLOCKERS and {f["reference"] for f in findings if f["severity"] == "blocker"} >= {
        images.api, images.worker}

    plan = _plan(tmp_path, registries, images, with_images=True)
    assert main(["backup", "--plan", plan, "-q"]) == Exit.OK
    code, findings = _audit(plan, tmp_path / "after.json")
    assert not [f for f in findings if f["severity"] == "blocker"], findings
    assert code == Exit.OK

    capsys.readouterr()
    out = tmp_path / "recovered-pods"
    assert main(["restore", "--plan", plan, "--failed", "cluster-a", "--to", f"pods={out}", "--json"]) == Exit.OK
    run = json.loads(capsys.readouterr().out)["run"]
    assert [s["step"] for s in run["steps"]] == ["images", "pods"]  # images before the workloads
    host = registries.source.host.replace(":", "-")
    api = json.loads((out / "api.json").read_text())
    assert api == [f"{registries.dr.host}/whole/{host}/team/api@{images.api_digest}"]
    assert registries.dr.client().head_manifest(f"whole/{host}/team/api", images.api_digest)


def test_status_checks_the_registry_copies_and_a_moved_tag_is_a_breach(installed, tmp_path, registries, images,
                                                                         capsys):
    """dr status finds what a restore would refuse in a DR registry copy, before the incident."""
    plan = _plan(tmp_path, registries, images, with_images=True, prefix="status")
    assert main(["backup", "--plan", plan, "-q"]) == Exit.OK
    capsys.readouterr()
    assert main(["status", "--plan", plan, "--json"]) == Exit.OK
    rows = [r for r in json.loads(capsys.readouterr().out)["runs"] if r["source"] == "images"]
    assert {r["subject"] for r in rows} == {f"images copy image {images.api}", f"images copy image {images.worker}"}
    assert not any(r["breach"] for r in rows) and all(r["manifests"] >= 1 for r in rows)

    # someone pushes over the DR copy's tag: a restore would refuse it, so status must say so now
    host = registries.source.host.replace(":", "-")
    other = push_image(registries.dr.client(), f"status/{host}/team/api", "1.0", [b"not the backed-up image"])
    assert main(["status", "--plan", plan, "--json"]) == Exit.RPO_BREACH
    rows = {r["subject"]: r for r in json.loads(capsys.readouterr().out)["runs"] if r["source"] == "images"}
    api = rows[f"images copy image {images.api}"]
    assert api["breach"] and f":1.0 names {other}" in api["detail"], api
    assert not rows[f"images copy image {images.worker}"]["breach"]
