"""Readers of sealed names (docs/format.md 8.1): the commands that run without the identity, and
a repository written before section 8.1.

Without the identity `dr verify`, `dr status`, `dr snapshots` and `dr audit` work on the stored
lines and name a secret artifact by its keyed identity. A repository whose secret lines hold
plaintext names (what writers before 8.1 wrote) stays readable, and its first backup after the
upgrade uploads no data and writes sealed lines.
"""

from __future__ import annotations

import json
import os

from dr.cli.exitcodes import Exit
from dr.cli.main import main
from dr.repository import names
from dr.repository.catalogs import read_catalog
from dr.repository.repositories import Repository
from dr.repository.stores.local import LocalStore
from tests.cli.planfiles import files_source, key_pair, local_target, write_plan
from tests.cli.test_name_canary import DIR, FILE, TARGET, _plant, _restored_exactly

CANARIES = (DIR, FILE, TARGET)


def _secret_plan(tmp_path) -> tuple[str, str]:
    identity, recipient = key_pair(tmp_path)
    plan = write_plan(tmp_path / "plan.yaml", local_target(tmp_path / "repo"),
                      files_source("vault-keys", [_plant(tmp_path)], secret=True), [recipient])
    return plan, identity


def _lines(repo_root) -> list:
    repo = Repository(LocalStore(str(repo_root)))
    return list(read_catalog(repo, repo.find_snapshot("latest").catalog))


def _run(capsys, *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def test_commands_without_the_identity_work_and_name_secrets_by_their_keyed_identity(tmp_path, capsys):
    plan, identity = _secret_plan(tmp_path)
    assert main(["backup", "--plan", plan, "-q"]) == Exit.OK
    for argv in (["verify"], ["verify", "--read-data"], ["status"], ["snapshots"], ["audit"], ["verify", "--json"]):
        code, output = _run(capsys, argv[0], "--plan", plan, *argv[1:])
        assert code == Exit.OK, (argv, output)  # not a sealed line's missing mode judged as damage
        assert not any(c in output for c in CANARIES), (argv, output)
    code, output = _run(capsys, "verify", "--plan", plan, "--read-data", "--identity", identity)
    assert code == Exit.OK, output  # opened: the files exporter checks the real modes, times, targets
    sealed = next(a for a in _lines(tmp_path / "repo") if a.kind == "file")
    os.remove(next((tmp_path / "repo" / "blobs").rglob(sealed.chunks[0])))
    code, output = _run(capsys, "verify", "--plan", plan)
    assert code == Exit.INTEGRITY
    assert f"vault-keys/{sealed.identity} (a sealed name: docs/format.md 8.1)" in output  # said so
    assert sealed.identity.startswith(names.PREFIX)
    assert not any(c in output for c in CANARIES), output


def _write_as_before_8_1(monkeypatch) -> None:
    """The writer before section 8.1: a secret line's identity, token and meta in plaintext."""
    monkeypatch.setattr(names.Sealer, "identity", lambda self, kind, identity: identity)
    monkeypatch.setattr(names.Sealer, "token", lambda self, token: token)
    monkeypatch.setattr(names.Sealer, "seal", lambda self, identity, meta, previous: meta)


def test_a_repository_written_before_sealed_names_stays_readable_and_its_next_backup_uploads_nothing(
        tmp_path, capsys, monkeypatch):
    plan, identity = _secret_plan(tmp_path)
    with monkeypatch.context() as patched:
        _write_as_before_8_1(patched)
        assert main(["backup", "--plan", plan, "-q"]) == Exit.OK
    old = _lines(tmp_path / "repo")
    assert {a.identity.split("/")[-1] for a in old} >= {DIR, FILE}  # the old form, as format.md 8 had it
    assert not any(names.is_sealed(a) for a in old) and all(a.encrypted for a in old if a.kind == "file")
    for argv in (["verify", "--read-data"], ["status"], ["snapshots"], ["audit"]):
        assert _run(capsys, argv[0], "--plan", plan, *argv[1:])[0] == Exit.OK, argv
    old_id = Repository(LocalStore(str(tmp_path / "repo"))).find_snapshot("latest").id
    _restored_exactly(plan, identity, tmp_path / "old")  # the new reader, the old lines
    capsys.readouterr()

    assert main(["backup", "--plan", plan, "--json"]) == Exit.OK
    stats = json.loads(capsys.readouterr().out)["results"][0]["stats"]
    assert stats["bytes_uploaded"] > 0  # the sealed catalog and nothing else:
    assert stats["blobs_uploaded"] == 1 and stats["artifacts_reused"] == len(old)
    new = _lines(tmp_path / "repo")
    assert all(names.is_sealed(a) and a.identity.startswith(names.PREFIX) for a in new)
    assert {tuple(a.chunks) for a in new} == {tuple(a.chunks) for a in old}
    _restored_exactly(plan, identity, tmp_path / "new")
    assert main(["restore", "--plan", plan, "--source", "vault-keys", "--snapshot", old_id[:12],
                 "--to", str(tmp_path / "again"), "--identity", identity]) == Exit.OK
