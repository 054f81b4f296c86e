"""Only a good backup counts (issue 29): a source whose run failed (a `files` path removed, a
`git` remote gone) is recorded as failed in its snapshot, and nothing downstream takes that run
for a backup: `dr status` and its dr_rpo_* metrics measure from the newest good one, retention
counts good ones and prune never forgets the newest, `dr restore --source` restores it.

Real CLI, real files on disk, a real bare Git remote made with `git`. A day of hourly runs in
seconds: dr's clock (dr.model.clock.now, which stamps snapshot times and which status measures
ages with) is moved one hour per run, as tests/cli/test_immutability.py moves it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from datetime import datetime, timedelta, timezone

import pytest
from prometheus_client.parser import text_string_to_metric_families

from dr.cli.exitcodes import Exit
from dr.cli.main import main
from dr.model import clock
from tests.cli.planfiles import local_target, tree_bytes, write_plan

RPO = timedelta(minutes=90)  # hourly runs: the second failed run is the first past it
RUNS = 24


@pytest.fixture
def hours(monkeypatch):
    """dr's clock, a day ago, moved by hand: `hours.append(...)` is the next hour."""
    moments = [datetime.now(timezone.utc).replace(microsecond=0) - timedelta(hours=RUNS + 1)]
    monkeypatch.setattr(clock, "now", lambda: moments[-1])
    return moments


def _run(capsys, *argv) -> tuple[int, dict]:
    code = main([*argv, "--json"])
    out = capsys.readouterr().out
    return code, json.loads(out) if out.strip() else {}


def _plan(tmp_path, source: str) -> str:
    rules = f"    rpo: {int(RPO.total_seconds() // 60)}m\n    retention: {{keep_last: 2}}\n"
    return write_plan(tmp_path / "plan.yaml", local_target(tmp_path / "repo"), source + rules)


def _metrics(path) -> dict[str, float]:
    with open(path, encoding="utf-8") as handle:
        return {s.name: s.value for f in text_string_to_metric_families(handle.read()) for s in f.samples
                if s.name.startswith("dr_rpo_") and s.labels.get("source") == "data"}


def _fail_hourly(tmp_path, capsys, hours, plan: str, code: str) -> None:
    """24 failing hourly runs, each followed by a prune and a status (in breach from the 2nd)."""
    for run in range(1, RUNS + 1):
        hours.append(hours[-1] + timedelta(hours=1))
        backup_code, backup = _run(capsys, "backup", "--plan", plan)
        [source] = backup["results"][0]["sources"]
        assert backup_code == Exit.PARTIAL and source["artifacts"] == 0
        assert [f["code"] for f in source["findings"]] == [code]
        prune_code, pruned = _run(capsys, "prune", "--plan", plan)
        assert prune_code == Exit.OK and len(pruned["forgotten"]) == (0 if run == 1 else 1)  # the failed run before
        status_code, status = _run(capsys, "status", "--plan", plan)
        [row] = status["sources"]
        assert row["age_seconds"] == run * 3600.0  # from the good backup, not from this run
        assert (status_code, row["breach"]) == ((Exit.RPO_BREACH, True) if run >= 2 else (Exit.OK, False))
        assert row["failed_runs"] == 1 and code in row["failure"]  # prune kept the newest failed run
    metrics_file = tmp_path / "status.prom"
    assert main(["status", "--plan", plan, "--metrics-file", str(metrics_file)]) == Exit.RPO_BREACH
    said = capsys.readouterr().out
    assert f"newest good backup 1d ago; the run since failed: {code}" in said and "BREACH" in said
    assert _metrics(metrics_file) == {"dr_rpo_age_seconds": RUNS * 3600.0, "dr_rpo_breach": 1.0,
                                      "dr_rpo_objective_seconds": RPO.total_seconds()}


def _kept(capsys, plan: str, good: str) -> None:
    """The good snapshot and the newest failed run are all that is left, and verify is clean."""
    code, listing = _run(capsys, "snapshots", "--plan", plan)
    outcomes = [(s["id"] == good, s["sources"][0]["outcome"]) for s in listing["snapshots"]]
    assert code == Exit.OK and outcomes == [(True, "good"), (False, "failed")]
    assert main(["verify", "--plan", plan, "--read-data", "-q"]) == Exit.OK



def test_a_removed_files_path_never_costs_its_last_good_backup(tmp_path, capsys, hours):
    data = tmp_path / "data"
    (data / "sub").mkdir(parents=True)
    (data / "app.yaml").write_text("replicas: 3\n")
    (data / "sub" / "token").write_bytes(os.urandom(3000))
    original = tree_bytes(data)
    plan = _plan(tmp_path, f'  - name: data\n    type: files\n    paths: ["{data}"]\n')
    code, first = _run(capsys, "backup", "--plan", plan)
    assert code == Exit.OK and first["results"][0]["sources"][0]["artifacts"] == 4
    assert _run(capsys, "status", "--plan", plan)[0] == Exit.OK
    shutil.rmtree(data)

    _fail_hourly(tmp_path, capsys, hours, plan, "files-path-missing")

    _kept(capsys, plan, first["results"][0]["snapshot"])
    out = tmp_path / "restored"
    assert main(["restore", "--plan", plan, "--source", "data", "--to", str(out)]) == Exit.OK
    captured = capsys.readouterr()
    assert f"snapshot {first['results'][0]['snapshot'][:8]}, source data: restored" in captured.out
    assert "restoring its newest good backup" in captured.err and "the run since failed" in captured.err
    assert tree_bytes(out / "data") == original


def _git(*argv, cwd=None) -> str:
    return subprocess.run(["git", *argv], cwd=cwd, check=True, capture_output=True, text=True,
                          env={**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}).stdout


def _remote(tmp_path) -> str:
    """A bare remote with two branches and a tag."""
    remote, work = tmp_path / "remote.git", tmp_path / "work"
    _git("init", "-q", "--bare", "-b", "main", str(remote))
    _git("init", "-q", "-b", "main", str(work))
    for n, branch in enumerate(["main", "release"]):
        if n:
            _git("checkout", "-q", "-b", branch, cwd=work)
        (work / f"{branch}.txt").write_text(f"{branch}\n")
        _git("add", ".", cwd=work)
        _git("-c", "user.name=t", "-c", "user.email=t@example.org", "commit", "-q", "-m", branch, cwd=work)
    _git("tag", "v1", cwd=work)
    _git("push", "-q", str(remote), "main", "release", "v1", cwd=work)
    return str(remote)


def test_an_unreachable_git_remote_never_costs_its_last_good_backup(tmp_path, capsys, hours):
    remote = _remote(tmp_path)
    refs = _git("ls-remote", remote)
    plan = _plan(tmp_path, f'  - name: data\n    type: git\n    repositories:\n'
                           f'      - {{name: platform, url: "{remote}"}}\n')
    code, first = _run(capsys, "backup", "--plan", plan)
    assert code == Exit.OK and first["results"][0]["sources"][0]["artifacts"] == 1
    os.rename(remote, remote + ".away")  # the remote is gone: git cannot reach it

    _fail_hourly(tmp_path, capsys, hours, plan, "git-export-failed")

    _kept(capsys, plan, first["results"][0]["snapshot"])
    restored = str(tmp_path / "restored.git")
    assert main(["restore", "--plan", plan, "--source", "data", "--to", restored, "-q"]) == Exit.OK
    assert _git("ls-remote", restored) == refs
    assert _git("--git-dir", restored, "show", "release:release.txt") == "release\n"


def test_a_manifest_written_before_outcomes_existed_infers_them(tmp_path, capsys):
    """Old manifests have no `outcome`: a source with an error-level finding and no artifacts is
    failed, one with artifacts is good (docs/format.md section 9)."""
    from dr.model.snapshots import SourceResult

    finding = {"severity": "error", "code": "files-path-missing", "message": "configured path missing"}
    empty = SourceResult.from_json({"name": "a", "exporter": "files", "artifacts": 0, "findings": [finding]})
    partial = SourceResult.from_json({"name": "a", "exporter": "files", "artifacts": 2, "findings": [finding]})
    fresh = SourceResult("a", "files", 2, findings=[finding])  # written now: any error finding fails it
    assert (empty.good, empty.holds, partial.good, partial.holds) == (False, False, True, True)
    assert (fresh.good, fresh.holds, fresh.to_json()["outcome"]) == (False, True, "failed")
    unknown = SourceResult.from_json({"name": "a", "exporter": "files", "artifacts": 2, "outcome": "partial"})
    assert not unknown.good


def test_retention_counts_good_runs_and_keeps_what_failed_runs_captured():
    """keep_last chooses among good runs and, apart, among runs holding artifacts; the newest
    good run and the newest run (failed) stay whatever the policy; empty failed runs go."""
    from dr.model.retention import snapshots_to_forget
    from dr.model.snapshots import Snapshot, SourceResult

    missing = [{"severity": "error", "code": "git-export-failed", "message": "unreachable"}]
    runs = {"good": SourceResult("git", "git", 3), "partial": SourceResult("git", "git", 2, findings=missing),
            "empty": SourceResult("git", "git", 0, findings=missing),
            "newest": SourceResult("git", "git", 0, findings=missing)}
    start = datetime(2026, 11, 1, tzinfo=timezone.utc)
    snapshots = [Snapshot("p", start + timedelta(hours=n), "h", "c", 0, [result], id=name)
                 for n, (name, result) in enumerate(runs.items())]
    assert snapshots_to_forget(snapshots, [("git", {"keep_last": 1})]) == ["empty"]
    assert snapshots_to_forget(snapshots, [("git", {"keep_last": 0})]) == ["partial", "empty"]
    assert snapshots_to_forget(snapshots, [("git", {"keep_last": None})]) == []  # no policy: keep all


def test_the_audit_judges_a_failed_source_from_its_newest_good_backup(tmp_path, capsys, hours):
    data, other = tmp_path / "data", tmp_path / "other"
    for folder, files in ((data, 3), (other, 1)):
        folder.mkdir()
        for n in range(files):
            (folder / f"f{n}.yaml").write_text(f"{folder.name}: {n}\n")
    plan = _plan(tmp_path, f'  - name: other\n    type: files\n    paths: ["{other}"]\n'
                           f'  - name: data\n    type: files\n    paths: ["{data}"]\n')
    assert _run(capsys, "backup", "--plan", plan)[0] == Exit.OK
    _, before = _run(capsys, "audit", "--plan", plan)
    shutil.rmtree(data)
    hours.append(hours[-1] + timedelta(hours=2))
    code, backup = _run(capsys, "backup", "--plan", plan)
    assert code == Exit.PARTIAL
    _, after = _run(capsys, "audit", "--plan", plan)
    assert after["snapshot"]["id"] == backup["results"][0]["snapshot"] != before["snapshot"]["id"]
    assert after["snapshot"]["artifacts"] == before["snapshot"]["artifacts"] == 6  # 2 folders, 4 files
    [stale] = [f for f in after["findings"] if f["code"] == "stale-backup"]
    assert "newest good snapshot of source data" in stale["message"] and "2h old" in stale["message"]
    assert "the run since failed: files-path-missing" in stale["message"]
