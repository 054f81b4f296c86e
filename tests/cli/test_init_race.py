"""Two first backups at once on one empty S3 prefix (issue 16, item 4).

Both processes import dr, then wait on a start file, so their first reads of the config and of
the lock folder really overlap. Both snapshots land: backups share the repository's lock (issue
30). Before the fix one of them exited 1 with "no repository here (no config object)" (it
missed the config, then saw it and raised), or both gave up with exit 5 (a lock collision).
"""

from __future__ import annotations

from dr.cli.exitcodes import Exit
from tests.cli.planfiles import files_source, s3_target, write_plan
from tests.cli.together import run_together

RUNS = 20


def test_two_simultaneous_first_backups_both_succeed(tmp_path, s3_bucket, moto_endpoint):
    data = tmp_path / "data"
    data.mkdir()
    (data / "a.txt").write_text("a\n")
    outcomes = []
    for run in range(RUNS):
        bucket = s3_bucket(region="us-east-1")
        plan = write_plan(tmp_path / f"plan{run}.yaml", s3_target(bucket, moto_endpoint, region="us-east-1"),
                          files_source("data", [str(data)]))
        results = run_together(str(tmp_path / f"go{run}"), [["backup", "--plan", plan]] * 2, timeout=120)
        codes = sorted(code for code, _ in results)
        outcomes.append(codes)
        assert codes == [Exit.OK, Exit.OK], (run, results)
        assert not any("Traceback" in err for _, err in results)
    assert len(outcomes) == RUNS
