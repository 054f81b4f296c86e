"""`dr drill` compares what it restored with the backup, not only the exporter with itself.

A second restore pass changes nothing when the exporter's comparison agrees with its restore,
however wrong both are: tests/plugins/acme_blanks restores every file empty and takes "exists"
for "identical". The drill must still fail, naming the item, through the catalog's digests (the
exporter names the file) or the exporter's fingerprints. Real backup, repository and restore.
"""

from __future__ import annotations

import json

import pytest

from dr.cli.exitcodes import Exit
from tests.plugins.installing import install_distribution
from tests.restore_planning.worlds import World


@pytest.fixture
def installed(tmp_path, monkeypatch):
    site = tmp_path / "site"
    install_distribution(site, "acme_blanks", {"blanks": "tests.plugins.acme_blanks:BlanksExporter"})
    monkeypatch.syspath_prepend(str(site))


def _world(tmp_path, compare: str) -> World:
    w = World(tmp_path / "platform")
    w.back_up_beside_config({"name": "notes", "type": "blanks", "compare": compare},
                            {"runbook.txt": "fail over to region-b\n"})
    return w


def _drill(w: World, capsys) -> tuple[int, dict]:
    code = w.dr("drill", "--plan", w.plan, "--failed", "cluster-a", "--identity", str(w.identity_file),
                "--to", str(w.root / "scratch"), "--json")
    return code, json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("compare", ["path", "fingerprint"])
def test_a_restore_that_writes_the_wrong_bytes_fails_the_drill_naming_the_item(installed, tmp_path, capsys,
                                                                               compare):
    w = _world(tmp_path, compare)
    capsys.readouterr()
    code, record = _drill(w, capsys)
    checks = {c["step"]: c for c in record["verify"]["steps"]}
    assert checks["notes"]["counts"] == {"unchanged": 1}  # the second pass alone is fooled
    assert checks["notes"]["verified"] is False
    assert checks["notes"]["mismatches"][0]["item"] == "runbook.txt"
    assert "1 of 1 items differ from the backup: runbook.txt" in checks["notes"]["reason"]
    assert (code, record["result"]) == (Exit.PARTIAL, "partial")
    assert "not verified: notes" in record["summary"]
    # The files exporter places every item, and they all hold the backup.
    assert checks["config"]["verified"] and checks["config"]["compared"] == 4
    assert checks["config"]["reason"].startswith("all 4 items identical to the backup")


def test_a_step_whose_exporter_places_nothing_says_it_was_not_compared(installed, tmp_path, capsys):
    w = _world(tmp_path, "none")
    capsys.readouterr()
    code, record = _drill(w, capsys)
    notes = next(c for c in record["verify"]["steps"] if c["step"] == "notes")
    assert code == Exit.OK and notes["verified"] and notes["compared"] == 0
    assert "1 of 1 items not compared with the backup (exporter blanks" in notes["reason"]
    assert "identical" not in notes["reason"]


def test_a_file_altered_after_the_restore_is_named(backed_up, capsys, monkeypatch):
    """The files exporter's own second pass would call it a conflict too; the comparison runs
    after it, so alter the file between the two (a disk that lost a write) and see it named."""
    import dr.drills.verifying as verifying

    w = backed_up
    scratch = w.root / "scratch"
    restored = scratch / "config" / "config" / "models" / "llama.json"
    real = verifying.compare

    def truncate_then_compare(plan, registry, step, reader):
        if step.name == "config":
            restored.write_bytes(b"")
        return real(plan, registry, step, reader)

    monkeypatch.setattr(verifying, "compare", truncate_then_compare)
    code = w.dr("drill", "--plan", w.plan, "--failed", "cluster-a", "--identity", str(w.identity_file),
                "--to", str(scratch), "--json")
    record = json.loads(capsys.readouterr().out)
    config = next(c for c in record["verify"]["steps"] if c["step"] == "config")
    assert code == Exit.PARTIAL and not config["verified"]
    assert config["mismatches"] == [{"item": "config/models/llama.json",
                                     "reason": f"{restored} holds 0 bytes, the backup 15"}]


def test_a_secret_step_names_what_differs_only_sealed(world, capsys, monkeypatch):
    import dr.drills.verifying as verifying
    from dr.repository import names
    from dr.repository.encryption import load_identities

    canary = "prod-db-root-password-c4n4ry"
    world.add_secret_files("passwords", f"{canary}.txt", "hunter2\n")
    capsys.readouterr()
    scratch = world.root / "scratch"
    real = verifying.compare

    def truncate_then_compare(plan, registry, step, reader):
        if step.name == "passwords":
            (scratch / "passwords" / "secrets" / f"{canary}.txt").write_bytes(b"hunter3\n")
        return real(plan, registry, step, reader)

    monkeypatch.setattr(verifying, "compare", truncate_then_compare)
    code = world.dr("drill", "--plan", world.plan, "--failed", "cluster-a", "--identity",
                    str(world.identity_file), "--to", str(scratch), "--json")
    record = json.loads(capsys.readouterr().out)
    check = next(c for c in record["verify"]["steps"] if c["step"] == "passwords")
    assert code == Exit.PARTIAL and not check["verified"] and check["mismatches"] == []
    assert check["reason"].startswith("1 of 2 items differ from the backup; their names and reasons are sealed")
    opened = names.unseal_json(check["mismatches_sealed"], load_identities(str(world.identity_file)))
    assert [m["item"] for m in opened] == [f"secrets/{canary}.txt"] and "sha256" in opened[0]["reason"]
    stored = (world.repo_path / "drills" / f"{record['id']}.json").read_bytes()
    assert canary.encode() not in stored


def test_a_comparison_that_raises_fails_the_step_with_the_error(installed, tmp_path, capsys, monkeypatch):
    from tests.plugins.acme_blanks import BlanksExporter

    w = _world(tmp_path, "path")
    capsys.readouterr()

    def broken(self, artifacts, reader, request):
        raise PermissionError(13, "Permission denied", "/scratch/notes/runbook.txt")

    monkeypatch.setattr(BlanksExporter, "restored_content", broken)
    code, record = _drill(w, capsys)
    notes = next(c for c in record["verify"]["steps"] if c["step"] == "notes")
    assert code == Exit.PARTIAL and not notes["verified"]
    assert notes["reason"] == ("the restored content could not be compared with the backup: PermissionError: "
                               "[Errno 13] Permission denied: '/scratch/notes/runbook.txt'")
