"""dr runs each command with fewer garbage collections (dr/kits/collecting.py), and gives the
process its own thresholds back when the command ends."""

from __future__ import annotations

import gc

import pytest

import dr.cli.main as cli
from dr.kits.collecting import THRESHOLDS, collecting_less


def test_the_thresholds_hold_inside_and_come_back_after_an_error():
    before = gc.get_threshold()
    assert before != THRESHOLDS
    with pytest.raises(RuntimeError):
        with collecting_less():
            assert gc.get_threshold() == THRESHOLDS
            raise RuntimeError("the command failed")
    assert gc.get_threshold() == before


def test_a_command_runs_inside_it(monkeypatch):
    seen: list[tuple[int, ...]] = []
    add = cli._add

    def recording(command, spec):
        add(command, spec)
        command.set_defaults(handler=lambda args, out: seen.append(gc.get_threshold()) or 0)
    monkeypatch.setattr(cli, "_add", recording)
    before = gc.get_threshold()
    assert cli.main(["plugins"]) == 0
    assert seen == [THRESHOLDS]
    assert gc.get_threshold() == before
