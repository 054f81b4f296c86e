"""Damage to the repository's own objects, not to an artifact's chunk, is a verify finding like
any other: the config, a snapshot's manifest, a snapshot's catalog. `dr verify` and `dr status`
list it (naming the object and what it held), go on with what they still can, exit 6 and still
publish their metrics, as `dr restore` refuses what they found. The local manifest cache, which a
backup alone reads, is rebuilt from the store when a copy in it is damaged (format.md section 11).

Before this, a damaged catalog of the newest snapshot made both commands stop with a bare
"integrity: blob ... is damaged" and publish nothing (tests/deploy/test_faked_day.py met it).
"""

from __future__ import annotations

import hashlib
import json
import tempfile
from pathlib import Path

import pytest

from dr.cli.exitcodes import Exit
from tests.cli.test_damage_reported import World, _dr


@pytest.fixture(scope="module")
def world(tmp_path_factory) -> World:
    return World(tmp_path_factory.mktemp("objects"))


def _flip(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))


def _metric(path: Path, name: str) -> float:
    values = [float(line.rsplit(" ", 1)[1]) for line in path.read_text().splitlines() if line.startswith(name + "{")]
    assert len(values) == 1, path.read_text()
    return values[0]


def _run(world: World, *argv: str) -> tuple[int, str, float, dict]:
    """(exit code, text, the command's problems metric, its --json document)."""
    metrics = world.root / "metrics.prom"
    code, said = _dr(*argv, "--plan", world.plan, "--metrics-file", str(metrics))
    json_code, document = _dr(*argv, "--plan", world.plan, "--json")
    assert json_code == code, (said, document)
    name = "dr_verify_problems" if argv[0] == "verify" else "dr_status_problems"
    return code, said, _metric(metrics, name), json.loads(document[:document.rindex("}") + 1])


def _restore(world: World, snapshot: str = "latest") -> tuple[int, str]:
    with tempfile.TemporaryDirectory(dir=world.root) as dest:
        return _dr("restore", "--plan", world.plan, "--source", "config", "--snapshot", snapshot, "--to", dest)


def _catalog(world: World, manifest: Path) -> Path:
    return world.blob(json.loads(manifest.read_bytes())["catalog"]["blob"])


def test_a_damaged_catalog_of_the_newest_snapshot_is_listed_by_verify_and_status(world):
    world.reset()
    older, newer = world.manifests()
    catalog = _catalog(world, newer)
    _flip(catalog)
    restored, said = _restore(world)
    assert restored == Exit.INTEGRITY and catalog.name in said  # what verify and status must find first
    code, report, problems, document = _run(world, "verify")
    assert code == Exit.INTEGRITY and problems >= 1, report
    assert f"PROBLEM: catalog of snapshot {newer.name[:8]}: blob {catalog.name} is damaged" in report
    assert "2 snapshots" in report  # the other one was checked all the same
    assert any(p.startswith(f"catalog of snapshot {newer.name[:8]}") for p in document["problems"])
    assert not document["ok"]
    code, report, problems, document = _run(world, "status")
    assert code == Exit.INTEGRITY and problems == 1, report
    assert f"PROBLEM: catalog of snapshot {newer.name[:8]}: blob {catalog.name} is damaged" in report
    assert len(document["problems"]) == 1
    # a snapshot a restore cannot read is no recovery point: each source is measured from the older one
    assert {row["snapshot"] for row in document["sources"]} == {older.name}


def test_a_damaged_catalog_of_an_older_snapshot_is_listed_by_verify(world):
    world.reset()
    older, newer = world.manifests()
    catalog = _catalog(world, older)
    _flip(catalog)
    assert _restore(world)[0] == Exit.OK  # latest does not need it ...
    assert _restore(world, older.name[:12])[0] == Exit.INTEGRITY  # ... a restore of that snapshot refuses it
    code, report, problems, document = _run(world, "verify")
    assert code == Exit.INTEGRITY and problems == 1, report
    assert f"PROBLEM: catalog of snapshot {older.name[:8]}: blob {catalog.name} is damaged" in report
    assert document["snapshots"] == 2 and document["artifacts"] > 0
    # status measures today's recovery points, which stand on the newer snapshot: it is intact
    code, report, problems, document = _run(world, "status")
    assert code == Exit.OK and problems == 0 and document["problems"] == [], report


@pytest.mark.parametrize("which", ["older", "newer"])
def test_a_damaged_manifest_is_listed_by_verify_and_left_out_by_status(world, which):
    world.reset()
    older, newer = world.manifests()
    manifest = older if which == "older" else newer
    _flip(manifest)
    code, report, problems, document = _run(world, "verify")
    assert code == Exit.INTEGRITY and problems == 1, report
    assert f"snapshot {manifest.name} is damaged: its manifest does not match its id" in report
    assert document["snapshots"] == 1  # the intact one was checked
    code, report, problems, document = _run(world, "status")  # format.md section 9: counted from the intact ones
    assert code == Exit.OK and problems == 0, report
    kept = newer if which == "older" else older
    assert {row["snapshot"] for row in document["sources"]} == {kept.name}
    assert _restore(world, manifest.name[:12])[0] == Exit.INTEGRITY


def test_a_damaged_config_is_listed_by_verify_and_status(world):
    world.reset()
    config = world.repo / "config"
    config.write_bytes(config.read_bytes().replace(b"dr-repository", b"dr-repositorz"))
    assert _restore(world)[0] == Exit.INTEGRITY
    code, report, problems, document = _run(world, "verify")
    assert code == Exit.INTEGRITY and problems == 1, report
    assert "PROBLEM: " in report and "config is not a dr repository config" in report
    assert document["problems"] and "nothing else was checked" in document["notes"][0]
    code, report, problems, document = _run(world, "status")
    assert code == Exit.INTEGRITY and problems == 1, report
    assert "config is not a dr repository config" in document["problems"][0]
    assert all(row["snapshot"] is None for row in document["sources"])


def test_verify_of_latest_when_a_manifest_is_damaged_is_a_finding(world):
    world.reset()
    _flip(world.manifests()[0])
    code, said = _dr("verify", "--plan", world.plan, "--snapshot", "latest")
    assert code == Exit.INTEGRITY and "PROBLEM: " in said and "manifest does not match its id" in said, said


def test_a_damaged_manifest_in_the_local_cache_is_read_again_from_the_store(world, tmp_path, monkeypatch):
    """The cache is not the repository: a damaged copy costs a read, not a finding (format.md 11)."""
    world.reset()
    monkeypatch.setenv("DR_CACHE_DIR", str(tmp_path / "cache"))
    assert _dr("backup", "--plan", world.plan, "-q")[0] == Exit.OK  # fills the cache
    cached = [p for p in (tmp_path / "cache").rglob("*") if p.is_file()]
    assert cached
    for path in cached:
        _flip(path)
    code, said = _dr("backup", "--plan", world.plan)
    assert code == Exit.OK and "0 B uploaded" in said, said  # every parent found all the same
    assert all(hashlib.sha256(p.read_bytes()).hexdigest() == p.name for p in cached)  # rebuilt from the store
    assert _dr("verify", "--plan", world.plan)[0] == Exit.OK
