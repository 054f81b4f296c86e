"""`dr restore --source NAME --keep-special-bits`: a valueless restore option (RestoreOption.switch)."""

from __future__ import annotations

import json
import os
import stat

from dr.cli.exitcodes import Exit
from dr.cli.main import main
from tests.cli.planfiles import files_source, local_target, write_plan


def _plan(tmp_path) -> str:
    data = tmp_path / "data"
    data.mkdir()
    (data / "tool").write_text("#!/bin/sh\n")
    os.chmod(data / "tool", 0o4755)
    plan = write_plan(tmp_path / "plan.yaml", local_target(tmp_path / "repo"), files_source("config", [str(data)]))
    assert main(["backup", "--plan", plan, "-q"]) == Exit.OK
    return plan


def test_the_switch_keeps_the_bits_and_without_it_they_are_stripped(tmp_path, capsys):
    plan = _plan(tmp_path)
    capsys.readouterr()
    assert main(["restore", "--plan", plan, "--source", "config", "--to", str(tmp_path / "a"), "--json"]) == Exit.OK
    assert stat.S_IMODE(os.stat(tmp_path / "a" / "data" / "tool").st_mode) == 0o755
    items = json.loads(capsys.readouterr().out)["outcomes"]
    assert any("setuid bits of mode 4755 stripped" in o["reason"] for o in items)
    assert main(["restore", "--plan", plan, "--source", "config", "--to", str(tmp_path / "b"),
                 "--keep-special-bits"]) == Exit.OK
    assert stat.S_IMODE(os.stat(tmp_path / "b" / "data" / "tool").st_mode) == 0o4755


def test_plugins_lists_it_and_a_value_is_refused(tmp_path, capsys):
    assert main(["plugins", "--json"]) == Exit.OK
    files = next(p for p in json.loads(capsys.readouterr().out)["exporters"] if p["name"] == "files")
    assert files["restore_options"] == ["--keep-special-bits: restore setuid, setgid and sticky bits as the "
                                        "catalog records them (stripped by default)"]
    plan = _plan(tmp_path)
    code = main(["restore", "--plan", plan, "--source", "config", "--to", str(tmp_path / "c"),
                 "--keep-special-bits=yes"])
    assert code == Exit.USAGE and "keep-special-bits" in capsys.readouterr().err
