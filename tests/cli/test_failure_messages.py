"""Expected failures are one line on stderr, never a traceback (issue 16, item 6).

A source whose store answers 503, a target nobody listens on, a forged catalog: each is a
condition dr expects, so it prints the reason and the object and no traceback. Only a bug (an
exception only code raises) may show its traceback, and only with DR_DEBUG=1 (the CLI's --debug).
"""

from __future__ import annotations

import json
import os

import pytest

from dr.cli.exitcodes import Exit
from dr.cli.main import main
from dr.model.snapshots import Snapshot
from dr.repository.catalogs import CatalogBuilder, read_catalog
from dr.repository.repositories import Repository
from dr.repository.stores.local import LocalStore
from tests.cli.planfiles import files_source, local_target, s3_target, write_plan
from tests.plugins.installing import install_distribution

FAILING = "tests.plugins.failing_sources"


@pytest.fixture
def failing_plugins(tmp_path, monkeypatch):
    site = tmp_path / "site"
    install_distribution(site, "failing_sources", {"flaky": f"{FAILING}:FlakyExporter",
                                                   "buggy": f"{FAILING}:BuggyExporter"})
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.delenv("DR_DEBUG", raising=False)


def _data(tmp_path) -> str:
    data = tmp_path / "data"
    data.mkdir(exist_ok=True)
    (data / "a.txt").write_text("a\n")
    return str(data)


def _plan_with_failing_sources(tmp_path) -> str:
    sources = files_source("config", [_data(tmp_path)]) + "  - name: flaky\n    type: flaky\n" \
        "  - name: buggy\n    type: buggy\n"
    return write_plan(tmp_path / "plan.yaml", local_target(tmp_path / "repo"), sources)


def test_a_failed_source_is_one_line_with_reason_and_object(tmp_path, failing_plugins, capsys):
    assert main(["backup", "--plan", _plan_with_failing_sources(tmp_path)]) == Exit.PARTIAL
    err = capsys.readouterr().err
    assert "Traceback" not in err and 'File "' not in err
    [flaky] = [line for line in err.splitlines() if "flaky" in line]
    assert flaky == ("flaky: failed: TransientStoreError: put s3://bucket/repo/blobs/ab/abcdef: "
                     "503 SlowDown (after 5 attempts)")
    [buggy] = [line for line in err.splitlines() if "buggy" in line]
    assert buggy.startswith("buggy: failed with an unexpected error") and "TypeError" in buggy
    assert "DR_DEBUG=1" in buggy


def test_dr_debug_shows_the_traceback_of_a_bug_only(tmp_path, failing_plugins, capsys, monkeypatch):
    monkeypatch.setenv("DR_DEBUG", "1")
    assert main(["backup", "--plan", _plan_with_failing_sources(tmp_path)]) == Exit.PARTIAL
    err = capsys.readouterr().err
    assert err.count("Traceback") == 1
    trace = err[err.index("Traceback"):]
    assert "BuggyExporter" not in trace.split("TypeError")[-1]  # the traceback ends at the TypeError
    assert "in export" in trace and "flaky" not in trace


def test_an_unreachable_target_is_one_line(tmp_path, aws_env, capsys):
    plan = write_plan(tmp_path / "plan.yaml", s3_target("nobody", "http://127.0.0.1:9", region="us-east-1"),
                      files_source("config", [_data(tmp_path)]))
    assert main(["backup", "--plan", plan]) == Exit.FAILURE
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) == 1 and "s3://nobody/repo" in err


def _forge_size(repo_root, size: int) -> None:
    """Replace the newest snapshot by one whose catalog claims `size` for a file: as someone with
    write access to the store could (the manifest and the catalog are content-addressed, not signed)."""
    repo = Repository(LocalStore(str(repo_root)))
    repo.open()
    [snap] = repo.snapshots()
    builder = CatalogBuilder()
    for artifact in read_catalog(repo, snap.catalog):
        if artifact.identity.endswith("a.txt"):
            artifact.size = size
        builder.add(artifact)
    forged = Snapshot.from_json({**snap.to_json(), "catalog": {"blob": repo.put_blob(builder.finish()),
                                                               "entries": builder.entries}}, "")
    repo.write_snapshot(forged)
    repo.forget(snap.id)


def test_a_catalog_claiming_an_absurd_size_is_a_finding_not_a_crash(tmp_path, capsys):
    plan = write_plan(tmp_path / "plan.yaml", local_target(tmp_path / "repo"),
                      files_source("config", [_data(tmp_path)]))
    assert main(["backup", "--plan", plan, "-q"]) == Exit.OK
    _forge_size(tmp_path / "repo", 10 ** 18)
    capsys.readouterr()
    out_dir = tmp_path / "out"
    assert main(["restore", "--plan", plan, "--to", f"config={out_dir}", "--dry-run"]) == Exit.OK
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err and "OverflowError" not in captured.err
    findings = [line for line in captured.out.splitlines() if "finding:" in line]
    assert len(findings) == 1 and str(10 ** 18) in findings[0] and "a.txt" in findings[0]
    assert main(["restore", "--plan", plan, "--to", f"config={out_dir}", "--dry-run", "--json"]) == Exit.OK
    estimate = json.loads(capsys.readouterr().out)["rto_estimate"]
    assert len(estimate["findings"]) == 1
    data_part = next(p for p in estimate["parts"] if p["part"] == "data_warmup")
    assert data_part["seconds"] is not None and data_part["seconds"] < 60
    # the restore itself refuses the content that does not match what the catalog claims
    code = main(["restore", "--plan", plan, "--to", f"config={out_dir}"])
    err = capsys.readouterr().err
    assert code != Exit.OK and "Traceback" not in err
    assert not os.path.exists(out_dir / "data" / "a.txt") or (out_dir / "data" / "a.txt").read_text() == "a\n"


def test_snapshots_shows_the_size_of_what_survived_not_what_was_read(tmp_path, failing_plugins, capsys):
    sources = files_source("config", [_data(tmp_path)]) + "  - name: flaky\n    type: flaky\n"
    plan = write_plan(tmp_path / "plan.yaml", local_target(tmp_path / "repo"), sources)
    assert main(["backup", "--plan", plan, "-q"]) == Exit.PARTIAL
    capsys.readouterr()
    assert main(["snapshots", "--plan", plan]) == Exit.OK
    [line] = [line for line in capsys.readouterr().out.splitlines() if "flaky (failed)" in line]
    assert " 2 B " in line and "MiB" not in line  # config holds a.txt ("a\n"); flaky read 3 MiB, then failed
