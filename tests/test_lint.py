"""Pyflakes' checks (through ruff, rule set F) over dr and its tests: undefined names, unused
imports and variables, shadowed definitions. Work lands here from parallel branches; a name one
branch renamed and another still calls (a NameError only the failing path reaches) is caught
here, not in an incident."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RUFF = Path(sys.executable).parent / "ruff"


def test_pyflakes_rules_hold():
    assert RUFF.exists(), f"{RUFF} is missing: install the test extra (ruff)"
    run = subprocess.run([str(RUFF), "check", "--select", "F", "--no-cache", "dr", "tests", "bench"], cwd=ROOT,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
