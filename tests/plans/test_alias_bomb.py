"""A YAML alias bomb in a plan is refused quickly, in little memory, as a plan error (issue 16, item 5).

`dr audit` runs on plans from pull requests in CI: a plan must not be able to keep dr busy.
Before the fix the plan's line map walked every alias path: more than 60 s and 2.4 GB.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from dr.cli.exitcodes import Exit
from dr.model.plan_loading import NODE_BUDGET, PlanError, parse_plan
from tests.cli.planfiles import files_source, local_target, write_plan

# 8 alias levels of 9: 9**8 (43 million) leaves once expanded, from about 500 bytes.
BOMB = "".join(
    [f'  l0: &l0 ["{"x" * 3}", "xxx", "xxx", "xxx", "xxx", "xxx", "xxx", "xxx", "xxx"]\n']
    + [f"  l{n}: &l{n} [{', '.join([f'*l{n - 1}'] * 9)}]\n" for n in range(1, 9)])

MEASURE = """
import json, resource, sys, time
from dr.cli.main import main
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
started = time.process_time()
code = main(sys.argv[1:])
elapsed = time.process_time() - started  # CPU seconds: what the plan costs, whatever else the machine runs
grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
print(json.dumps({"code": code, "seconds": elapsed, "rss_growth_kib": grown}))
"""


def _bomb_plan(tmp_path) -> str:
    path = write_plan(tmp_path / "bomb.yaml", local_target(tmp_path / "repo"),
                      files_source("data", [str(tmp_path)]))
    with open(path, "a", encoding="utf-8") as handle:
        handle.write("laughs:\n" + BOMB)
    return path


def test_the_bomb_is_small():
    assert len(BOMB) < 840 and BOMB.count("*") == 8 * 9


@pytest.mark.parametrize("command", [["snapshots"], ["audit"], ["backup"]])
def test_an_alias_bomb_is_refused_in_under_a_second_and_100_mb(tmp_path, command):
    """Bounded work, measured as the process's CPU time (wall time on a loaded CI machine says
    more about the machine); before the fix it was over 60 s of CPU."""
    plan = _bomb_plan(tmp_path)
    run = subprocess.run([sys.executable, "-c", MEASURE, *command, "--plan", plan],
                         capture_output=True, text=True, timeout=60)
    measured = json.loads(run.stdout.strip().splitlines()[-1])
    assert measured["code"] == Exit.USAGE, run.stderr
    assert measured["seconds"] < 1.0
    assert measured["rss_growth_kib"] < 100 * 1024
    assert "Traceback" not in run.stderr
    assert "aliases that expand to more than" in run.stderr


def test_a_self_containing_alias_is_refused(tmp_path):
    text = open(_bomb_plan(tmp_path), encoding="utf-8").read().split("laughs:")[0]
    with pytest.raises(PlanError) as info:
        parse_plan(text + "loop: &loop [1, *loop]\n", "p.yaml")
    assert "contains itself" in str(info.value)


def test_aliases_within_the_budget_still_load(tmp_path):
    text = open(_bomb_plan(tmp_path), encoding="utf-8").read().split("laughs:")[0]
    small = 'x-defaults: &d {a: 1}\nx-more: [*d, *d, *d]\n'
    with pytest.raises(PlanError) as info:  # an unknown top-level key, but not an alias problem
        parse_plan(text + small, "p.yaml")
    assert "alias" not in str(info.value) and "x-defaults" in str(info.value)
    assert NODE_BUDGET >= 10_000
