"""`dr drill`: audit, restore into scratch, verify, record measured RPO/RTO; `--history` shows the trend."""

from __future__ import annotations

import json
from datetime import datetime, timezone

import pytest

from dr.cli.exitcodes import Exit
from dr.drills.history import HistoryError, read_history, write_record
from dr.restore.journals import read_journal
from tests.restore_planning.worlds import refs


def _drill(w, capsys, *extra: str) -> tuple[int, dict]:
    code = w.dr("drill", "--plan", w.plan, "--failed", "cluster-a", "--identity", str(w.identity_file),
                "--json", *extra)
    return code, json.loads(capsys.readouterr().out)


def test_drill_restores_into_scratch_verifies_and_records_what_it_measured(backed_up, capsys):
    w = backed_up
    scratch = w.root / "scratch"
    snapshot = w.repository().snapshots()[-1]
    code, record = _drill(w, capsys, "--to", str(scratch))
    assert code == Exit.OK and record["result"] == "recovered"
    assert record["summary"] == "3 of 3 steps restored and verified"
    # Every source went to its own subfolder of the scratch target, and holds the backup.
    assert refs(scratch / "declarations" / "declarations.git") == refs(w.declarations)
    assert refs(scratch / "infra" / "infra.git") == refs(w.infra)
    assert (scratch / "config" / "config" / "models" / "llama.json").exists()
    assert all(c["verified"] for c in record["verify"]["steps"])
    # Measured RPO: the age of the data restored; RTO: wall time per phase.
    age = (datetime.now(timezone.utc) - snapshot.time).total_seconds()
    assert 0 < record["rpo_seconds"] <= age
    assert list(record["rto"]["phases"]) == ["audit", "plan", "restore", "verify"]
    assert record["rto"]["total_seconds"] == pytest.approx(sum(record["rto"]["phases"].values()), abs=0.01)
    assert set(record["rto"]["steps"]) == {"declarations", "infra", "config"}
    assert record["rto_estimate"]["parts"][0]["part"] == "detection"
    # The record is in the history; its restore was journaled as a drill.
    stored = w.repo_path / "drills" / f"{record['id']}.json"
    assert json.loads(stored.read_text())["result"] == "recovered"
    journal = read_journal(w.repository(), record["restore"]["restore_id"])
    assert journal.header["purpose"] == "drill" and journal.finished


def test_drill_records_refusals_and_failures_not_just_recovered(world, capsys):
    w = world
    secrets = w.root / "data" / "secrets"
    secrets.mkdir(parents=True)
    (secrets / "token").write_text("s3cr3t")
    w.sources.append({"name": "secrets", "type": "files", "sensitivity": "secret", "paths": [str(secrets)]})
    w.key_location = "k8s://cluster-a/secrets/dr-system/age-identity"  # the key only in the failed cluster
    w.backup()
    capsys.readouterr()
    not_a_folder = w.root / "occupied"
    not_a_folder.write_text("a file where the config should go")
    code, record = _drill(w, capsys, "--to", str(w.root / "scratch"), "--to", f"config={not_a_folder}")
    assert code == Exit.PARTIAL and record["result"] == "partial"
    steps = {s["step"]: s for s in record["restore"]["steps"]}
    assert steps["secrets"]["status"] == "refused" and "private key" in steps["secrets"]["reason"]
    assert steps["config"]["status"] == "failed" and "not a directory" in steps["config"]["reason"]
    assert steps["declarations"]["status"] == "succeeded"
    verified = {c["step"]: c["verified"] for c in record["verify"]["steps"]}
    assert verified == {"declarations": True, "infra": True, "config": False, "secrets": False}
    assert "failed: config" in record["summary"] and "refused: secrets" in record["summary"]
    assert record["audit"]["blockers"] >= 1
    assert any(f["code"] == "key-in-failed-domain" for f in record["audit"]["findings"])


def test_history_appends_and_shows_the_trend(backed_up, capsys):
    w = backed_up
    first_code, first = _drill(w, capsys, "--to", str(w.root / "scratch-1"))
    first_bytes = (w.repo_path / "drills" / f"{first['id']}.json").read_bytes()
    second_code, second = _drill(w, capsys, "--to", str(w.root / "scratch-2"))
    assert (first_code, second_code) == (Exit.OK, Exit.OK)
    assert sorted(p.name for p in (w.repo_path / "drills").iterdir()) == sorted(
        [f"{first['id']}.json", f"{second['id']}.json"])
    assert (w.repo_path / "drills" / f"{first['id']}.json").read_bytes() == first_bytes  # never rewritten
    with pytest.raises(HistoryError):
        write_record(w.repository(), dict(first))

    assert w.dr("drill", "--plan", w.plan, "--history", "--json") == Exit.OK
    history = json.loads(capsys.readouterr().out)
    assert [d["id"] for d in history["drills"]] == [first["id"], second["id"]]
    trend = history["trend"]
    assert trend["drills"] == 2 and trend["results"] == {"recovered": 2}
    assert trend["rto_seconds"]["last"] == second["rto"]["total_seconds"]
    assert trend["rto_seconds"]["change"] == pytest.approx(second["rto"]["total_seconds"] - first["rto"]["total_seconds"])
    assert trend["rpo_seconds"]["previous"] == first["rpo_seconds"]

    assert w.dr("drill", "--plan", w.plan, "--history") == Exit.OK
    text = capsys.readouterr().out
    assert "2 drill(s) in target dr-site" in text and text.count("recovered") >= 2 and "RTO: last" in text
    assert len(read_history(w.repository())) == 2


def test_drill_needs_a_failed_domain_and_a_scratch_target(backed_up, capsys):
    w = backed_up
    assert w.dr("drill", "--plan", w.plan, "--to", str(w.root / "s")) == Exit.USAGE
    assert w.dr("drill", "--plan", w.plan, "--failed", "nowhere", "--to", str(w.root / "s")) == Exit.USAGE
    assert "nowhere" in capsys.readouterr().err
