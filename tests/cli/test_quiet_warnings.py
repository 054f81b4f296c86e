"""Cron runs `dr backup -q`: what a person must still see (a stale lock taken over, sources the
metrics cannot watch) is printed under --quiet too; the chatter is not."""

from __future__ import annotations

import json
import time

from dr.cli.exitcodes import Exit
from dr.cli.main import main
from dr.repository import layout
from dr.repository.repositories import Repository
from dr.repository.stores.local import LocalStore
from tests.cli.planfiles import files_source, local_target, write_plan


def test_a_stale_lock_warning_is_printed_under_quiet(tmp_path, capsys):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "a.txt").write_text("a\n")
    plan = write_plan(tmp_path / "plan.yaml", local_target(tmp_path / "repo"),
                      files_source("data", [str(tmp_path / "data")]))
    assert main(["backup", "--plan", plan, "-q"]) == Exit.OK
    # a lock left by a process on another host an hour ago: stale, taken over with a warning
    store = Repository(LocalStore(str(tmp_path / "repo"))).store
    body = {"hostname": "other-host", "pid": 1, "process_start": "1", "exclusive": True, "command": "dr backup",
            "time": time.time() - 3600}
    store.put(layout.lock_key("old"), json.dumps(body).encode())
    capsys.readouterr()
    assert main(["backup", "--plan", plan, "-q"]) == Exit.OK
    err = capsys.readouterr().err
    assert err.count("warning:") == 1 and "stale" in err and "other-host" in err
