"""Running dr commands in the fault suites: exit OK, JSON out, and never a traceback on stderr."""

from __future__ import annotations

import json

from dr.cli.exitcodes import Exit
from dr.cli.main import main


def run_ok(capsys, *argv: str) -> dict:
    code = main([*argv, "--json"])
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err and 'File "' not in captured.err, captured.err
    assert code == Exit.OK, f"{argv[0]} exited {code}: {captured.out}"
    return json.loads(captured.out)


def backup_verify_restore(capsys, plan: str, source: str, to: str, *restore: str) -> dict:
    """Backup, verify every byte, restore `source` to `to`: each must succeed; the restore's JSON."""
    backup = run_ok(capsys, "backup", "--plan", plan)
    assert not any(s.get("error") for r in backup["results"] for s in r["sources"]), backup
    assert run_ok(capsys, "verify", "--plan", plan, "--read-data")["ok"] is True
    return run_ok(capsys, "restore", "--plan", plan, "--source", source, "--to", to, *restore)
