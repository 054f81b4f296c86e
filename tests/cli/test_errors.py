"""The top-level handler: dr's own errors are one line and their exit code (a traceback only
with --debug); anything else is a bug, printed with its traceback and a request to report it."""

from __future__ import annotations

import pytest

from dr import __version__
from dr.cli.exitcodes import Exit
from dr.cli.main import main
from dr.contract.registry import Registry
from tests.cli.planfiles import files_source, local_target, write_plan

HINT = f"this is a bug in dr: please report it with the traceback above (dr --version: {__version__})"


@pytest.fixture
def plan(tmp_path) -> str:
    (tmp_path / "cfg").mkdir()
    return write_plan(tmp_path / "plan.yaml", local_target(tmp_path / "repo"),
                      files_source("config", [str(tmp_path / "cfg")]))


def _divide_by_zero(*args, **kwargs):
    return 1 / 0


@pytest.mark.parametrize("bug", [ZeroDivisionError, KeyError, ValueError])
def test_a_bug_prints_its_traceback_and_the_hint_and_exits_1(monkeypatch, capsys, bug):
    def broken(self):
        raise bug("internal-detail")

    monkeypatch.setattr(Registry, "info", broken)
    assert main(["plugins"]) == Exit.FAILURE == 1
    err = capsys.readouterr().err
    assert "Traceback (most recent call last)" in err and f"{bug.__name__}: " in err
    assert "internal-detail" in err and err.rstrip().endswith(HINT)


def test_a_bug_deep_in_a_command_is_reported_the_same(monkeypatch, plan, capsys):
    monkeypatch.setattr("dr.repository.pruning.snapshots_to_forget", _divide_by_zero)
    assert main(["backup", "--plan", plan, "-q"]) == Exit.OK
    capsys.readouterr()
    assert main(["prune", "--plan", plan, "--quiet"]) == Exit.FAILURE
    err = capsys.readouterr().err
    assert "ZeroDivisionError" in err and "snapshots_to_forget" in err and HINT in err


def test_an_expected_error_is_one_line_without_traceback(plan, capsys):
    assert main(["snapshots", "--plan", plan, "--target", "nope"]) == Exit.USAGE
    err = capsys.readouterr().err
    assert "no target 'nope'" in err and "(targets: dr-site)" in err
    assert "Traceback" not in err and "bug in dr" not in err


def test_debug_adds_the_traceback_of_an_expected_error(plan, capsys):
    assert main(["snapshots", "--plan", plan, "--target", "nope", "--debug"]) == Exit.USAGE
    err = capsys.readouterr().err
    assert "Traceback (most recent call last)" in err and "NotInPlan" in err
    assert "no target 'nope'" in err and "bug in dr" not in err


def test_a_missing_file_is_an_operator_error(monkeypatch, capsys):
    def missing(self):
        raise FileNotFoundError(2, "No such file or directory", "/nowhere/x")

    monkeypatch.setattr(Registry, "info", missing)
    assert main(["plugins"]) == Exit.FAILURE
    err = capsys.readouterr().err
    assert "/nowhere/x" in err and "Traceback" not in err and "bug in dr" not in err


def test_an_unknown_source_for_backup_is_a_usage_error(plan, capsys):
    assert main(["backup", "--plan", plan, "--source", "nope"]) == Exit.USAGE
    err = capsys.readouterr().err
    assert "no source 'nope'" in err and "(sources: config)" in err and "Traceback" not in err
