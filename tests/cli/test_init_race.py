"""Two first backups at once on one empty S3 prefix (issue 16, item 4).

Both processes import dr, then wait on a start file, so their first reads of the config and of
the lock folder really overlap. Either both snapshots land, or one backup saw the other's lock
and exits 5. Before the fix one of them exited 1 with "no repository here (no config object)"
(it missed the config, then saw it and raised), or both gave up with exit 5 (a lock collision).
"""

from __future__ import annotations

import os
import subprocess
import sys

from dr.cli.exitcodes import Exit
from tests.cli.planfiles import files_source, s3_target, write_plan

RUNS = 20

_WAIT_THEN_RUN = (
    "import os, sys, time\n"
    "import dr.cli.main as cli\n"
    "go = sys.argv[1]\n"
    "print('ready', flush=True)\n"
    "while not os.path.exists(go):\n"
    "    time.sleep(0.001)\n"
    "sys.argv = ['dr'] + sys.argv[2:]\n"
    "cli.entry()\n"
)


def _start_pair(plan: str, go: str) -> list[subprocess.Popen]:
    return [subprocess.Popen([sys.executable, "-c", _WAIT_THEN_RUN, go, "backup", "--plan", plan],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=os.environ.copy())
            for _ in range(2)]


def test_two_simultaneous_first_backups_both_succeed_or_one_is_locked(tmp_path, s3_bucket, moto_endpoint):
    data = tmp_path / "data"
    data.mkdir()
    (data / "a.txt").write_text("a\n")
    outcomes = []
    for run in range(RUNS):
        bucket = s3_bucket(region="us-east-1")
        plan = write_plan(tmp_path / f"plan{run}.yaml", s3_target(bucket, moto_endpoint, region="us-east-1"),
                          files_source("data", [str(data)]))
        go = str(tmp_path / f"go{run}")
        pair = _start_pair(plan, go)
        for child in pair:  # both have imported dr and wait on the start file
            assert child.stdout.readline().strip() == "ready"
        open(go, "w").close()
        results = [(child.wait(timeout=120), child.stderr.read()) for child in pair]
        for child in pair:
            child.stdout.close()
            child.stderr.close()
        codes = sorted(code for code, _ in results)
        outcomes.append(codes)
        assert codes in ([Exit.OK, Exit.OK], [Exit.OK, Exit.LOCKED]), (run, results)
        for code, err in results:
            assert "Traceback" not in err
            if code == Exit.LOCKED:
                assert "is locked" in err
    assert len(outcomes) == RUNS
