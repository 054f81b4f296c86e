"""Restore journals and drill records keep no secret's name in plaintext (issue 29, item 1).

A whole-plan restore writes a step record per step into the target repository (docs/format.md
4.1): its reason and up to 50 failed items, each with its name and why. When a secret-class
source's items fail, those names are what the sealed catalog hides, so the record holds them
only sealed to the plan's recipients; with the identity they read back.
"""

from __future__ import annotations

import json

from dr.repository import names
from dr.repository.encryption import load_identities

CANARY = "prod-db-root-password-c4n4ry"


def _failing_secret_restore(world, capsys):
    world.add_secret_files("passwords", f"{CANARY}.txt", "hunter2\n")
    capsys.readouterr()
    blocked = world.root / "not-a-folder"
    blocked.write_text("a file where the restore needs a folder\n")
    code = world.dr(*world.restore_args("--to", f"passwords={blocked}", "--to", f"config={world.root / 'out'}",
                                        "--json", "-q"))
    return code


def test_failed_secret_items_are_sealed_in_the_journal(world, capsys):
    code = _failing_secret_restore(world, capsys)
    printed = json.loads(capsys.readouterr().out)
    [step] = [s for s in printed["run"]["steps"] if s["step"] == "passwords"]
    assert code != 0 and step["status"] == "failed" and step["failed_items_total"] >= 1
    assert any(CANARY in item["item"] for item in step["failed_items"])  # the operator sees them
    stored = [path for path in world.journal_files()]
    assert stored and not [p for p in stored if CANARY.encode() in p.read_bytes()]
    [record] = [json.loads(p.read_text()) for p in stored if p.name.endswith("-passwords.json")]
    assert record["failed_items"] == [] and CANARY not in record["reason"]
    opened = names.unseal_json(record["failed_items_sealed"], load_identities(str(world.identity_file)))
    assert any(CANARY in item["item"] for item in opened)
    # a step without failures keeps its record as it was
    [config] = [json.loads(p.read_text()) for p in stored if p.name.endswith("-config.json")]
    assert "failed_items_sealed" not in config and config["failed_items"] == []
