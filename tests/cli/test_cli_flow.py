"""The command line end to end: backup, snapshots, verify, restore, prune, plugins; exit codes."""

from __future__ import annotations

import json
import os

import boto3

from dr.cli.exitcodes import Exit
from dr.cli.main import main
from tests.cli.planfiles import files_source, local_target, s3_target, write_plan


def _data(root) -> str:
    data = os.path.join(str(root), "cfg")
    os.makedirs(os.path.join(data, "sub"))
    for i in range(5):
        with open(os.path.join(data, "sub" if i % 2 else "", f"f{i}.yaml"), "w") as handle:
            handle.write(f"value: {i}\n" * (i + 1))
    return data


def _json(capsys) -> dict:
    return json.loads(capsys.readouterr().out)


def test_full_flow_on_s3_with_object_lock_in_another_region(tmp_path, s3_bucket, moto_endpoint, capsys):
    bucket = s3_bucket(region="eu-west-1", object_lock=True)
    s3 = boto3.client("s3", endpoint_url=moto_endpoint, region_name="eu-west-1")
    s3.put_object_lock_configuration(Bucket=bucket, ObjectLockConfiguration={
        "ObjectLockEnabled": "Enabled", "Rule": {"DefaultRetention": {"Mode": "GOVERNANCE", "Days": 1}}})
    data = _data(tmp_path)
    plan = write_plan(tmp_path / "plan.yaml", s3_target(bucket, moto_endpoint, lock="governance"),
                      files_source("config", [data]))
    assert main(["backup", "--plan", plan, "--json"]) == Exit.OK
    first = _json(capsys)["results"][0]
    assert first["stats"]["artifacts"] == 7  # root dir, sub dir, 5 files
    assert main(["backup", "--plan", plan, "--json"]) == Exit.OK
    second = _json(capsys)["results"][0]
    assert second["stats"]["bytes_uploaded"] == 0 and second["stats"]["artifacts_reused"] == 7
    assert main(["snapshots", "--plan", plan, "--json"]) == Exit.OK
    listed = _json(capsys)["snapshots"]
    assert [s["id"] for s in listed] == [first["snapshot"], second["snapshot"]]
    assert main(["verify", "--plan", plan, "--read-data", "--json"]) == Exit.OK
    assert _json(capsys)["ok"] is True
    out = tmp_path / "restored"
    assert main(["restore", "--plan", plan, "--source", "config", "--to", str(out), "--snapshot",
                 first["snapshot"][:8], "--json"]) == Exit.OK
    assert _json(capsys)["counts"] == {"restored": 7}
    assert (out / "cfg" / "sub" / "f3.yaml").read_text() == "value: 3\n" * 4
    assert main(["restore", "--plan", plan, "--source", "config", "--to", str(out), "--json"]) == Exit.OK
    assert set(_json(capsys)["counts"]) == {"unchanged"}
    # nothing was ever overwritten: every object has exactly one version
    versions = s3.list_object_versions(Bucket=bucket).get("Versions", [])
    keys = [v["Key"] for v in versions]
    assert len(keys) == len(set(keys))


def test_restore_dry_run_changes_nothing(tmp_path, capsys):
    plan = write_plan(tmp_path / "plan.yaml", local_target(tmp_path / "repo"), files_source("config", [_data(tmp_path)]))
    assert main(["backup", "--plan", plan, "-q"]) == Exit.OK
    assert main(["restore", "--plan", plan, "--source", "config", "--to", str(tmp_path / "out"), "--dry-run"]) == Exit.OK
    assert "planned" in capsys.readouterr().out
    assert not (tmp_path / "out").exists()


def test_quiet_restore_lists_only_what_did_not_go_as_asked(tmp_path, capsys):
    plan = write_plan(tmp_path / "plan.yaml", local_target(tmp_path / "repo"), files_source("config", [_data(tmp_path)]))
    assert main(["backup", "--plan", plan, "-q"]) == Exit.OK
    out = tmp_path / "out"
    assert main(["restore", "--plan", plan, "--source", "config", "--to", str(out)]) == Exit.OK
    loud = capsys.readouterr().out
    assert sum(line.startswith("  restored ") for line in loud.splitlines()) == 7  # each item, without --quiet
    (out / "cfg" / "f0.yaml").write_text("edited\n")
    # a conflict is not a success (exit 3, documented), and it is the one line listed
    assert main(["restore", "--plan", plan, "--source", "config", "--to", str(out), "-q"]) == Exit.PARTIAL
    quiet = capsys.readouterr().out.splitlines()
    listed = [line for line in quiet if line.startswith("  ") and "not listed" not in line]
    assert len(listed) == 1 and "conflict" in listed[0] and "f0.yaml" in listed[0]
    assert "(6 items restored, unchanged or planned are not listed under --quiet" in "\n".join(quiet)
    assert quiet[-1].startswith("summary: ") and "1 conflict" in quiet[-1] and "6 unchanged" in quiet[-1]


def test_verify_exits_with_the_integrity_code_on_damage(tmp_path, capsys):
    repo = tmp_path / "repo"
    plan = write_plan(tmp_path / "plan.yaml", local_target(repo), files_source("config", [_data(tmp_path)]))
    assert main(["backup", "--plan", plan, "-q"]) == Exit.OK
    from dr.repository.repositories import Repository
    from dr.repository.stores.local import LocalStore

    catalog = Repository(LocalStore(str(repo))).find_snapshot("latest").catalog
    blob = max((p for p in (repo / "blobs").rglob("*") if p.is_file() and p.name != catalog),
               key=lambda p: p.stat().st_size)
    blob.write_bytes(b"X" + blob.read_bytes()[1:])
    assert main(["verify", "--plan", plan]) == Exit.OK  # presence only: a data blob is not read
    assert main(["verify", "--plan", plan, "--read-data"]) == Exit.INTEGRITY


def test_a_failed_source_is_named_and_the_others_land(tmp_path, capsys):
    good = _data(tmp_path)
    plan = write_plan(tmp_path / "plan.yaml", local_target(tmp_path / "repo"),
                      files_source("good", [good]) + "  - name: remote\n    type: git\n    repositories:\n"
                      f"      - {{name: gone, url: \"{tmp_path}/no-such-remote.git\"}}\n")
    assert main(["backup", "--plan", plan, "--json"]) == Exit.PARTIAL
    result = _json(capsys)["results"][0]
    by_name = {s["name"]: s for s in result["sources"]}
    assert by_name["remote"]["findings"][0]["severity"] == "error"
    assert "no-such-remote" in by_name["remote"]["findings"][0]["message"]
    assert "error" not in by_name["good"] and not by_name["good"].get("findings")
    assert result["snapshot"]


def test_a_backup_beside_another_runs_and_beside_a_prune_exits_with_the_lock_code(tmp_path, capsys):
    from dr.repository.locks import Lock
    from dr.repository.repositories import Repository
    from dr.repository.stores.local import LocalStore

    plan = write_plan(tmp_path / "plan.yaml", local_target(tmp_path / "repo"), files_source("config", [_data(tmp_path)]))
    repo = Repository(LocalStore(str(tmp_path / "repo")))
    repo.init()
    with Lock(repo, exclusive=False, command="dr backup (the other one)").acquire():
        assert main(["backup", "--plan", plan, "-q"]) == Exit.OK  # backups share the lock
    with Lock(repo, exclusive=True, command="dr prune (running)").acquire():
        assert main(["backup", "--plan", plan]) == Exit.LOCKED
    assert "exclusive lock by 'dr prune (running)'" in capsys.readouterr().err
    assert main(["backup", "--plan", plan, "-q"]) == Exit.OK


def test_prune_applies_retention(tmp_path, capsys):
    data = _data(tmp_path)
    plan = write_plan(tmp_path / "plan.yaml", local_target(tmp_path / "repo"),
                      files_source("config", [data]).rstrip("\n") + "\n    retention: {keep_last: 2}\n")
    for i in range(4):
        with open(os.path.join(data, "changing.txt"), "w") as handle:
            handle.write(f"version {i}\n")
        assert main(["backup", "--plan", plan, "-q"]) == Exit.OK
    capsys.readouterr()
    assert main(["prune", "--plan", plan, "--json"]) == Exit.OK
    assert len(_json(capsys)["forgotten"]) == 2
    assert main(["snapshots", "--plan", plan, "--json"]) == Exit.OK
    assert len(_json(capsys)["snapshots"]) == 2
    assert main(["verify", "--plan", plan, "--read-data"]) == Exit.OK


def test_plugins_lists_the_builtins(capsys):
    assert main(["plugins", "--json"]) == Exit.OK
    names = {p["name"] for p in _json(capsys)["exporters"]}
    assert {"git", "files"} <= names


def test_bad_plan_is_a_usage_error_without_traceback(tmp_path, capsys):
    path = tmp_path / "bad.yaml"
    path.write_text("version: 1\nname: x\nsourcse: []\n")
    assert main(["backup", "--plan", str(path)]) == Exit.USAGE
    err = capsys.readouterr().err
    assert "did you mean 'sources'" in err and "Traceback" not in err
