"""Plugin commands: the `dr.commands` entry-point group, installed as a third party's would be.

Each case runs the real `dr` entry point in a subprocess whose sys.path holds a distribution
declaring the entry point (tests/plugins/installing.py), as `pip install` would leave it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from tests.plugins.installing import install_distribution, run_without_entry_points

PLUGIN = textwrap.dedent('''
    """A third party's dr command."""
    from dr.cli.arguments import CommandSpec


    def arguments(p):
        p.add_argument("--who", default="world")


    def run(args, out):
        out.say(f"hello {args.who}")
        out.document({"greeted": args.who})
        return 0


    HELLO = CommandSpec("hello", "greet someone (a plugin's command)", arguments, run)
    BACKUP = CommandSpec("backup", "a plugin's attempt to replace dr backup", arguments, run)
    WRONG = CommandSpec("other", "a spec under the wrong name", arguments, run)
''')


def _site(tmp_path: Path, entries: dict[str, str]) -> Path:
    site = tmp_path / "site"
    (site / "acme_cmds").mkdir(parents=True)
    (site / "acme_cmds" / "__init__.py").write_text(PLUGIN)
    (site / "acme_broken.py").write_text("raise RuntimeError('cannot start: no config')\n")
    install_distribution(site, "acme_cmds", entries, group="dr.commands")
    return site


def _dr(site: Path, *argv: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(site)}
    return subprocess.run([sys.executable, "-m", "dr", *argv], capture_output=True, text=True, timeout=120, env=env)


def test_a_plugin_command_runs_like_a_built_in_and_is_listed(tmp_path):
    site = _site(tmp_path, {"hello": "acme_cmds:HELLO"})
    done = _dr(site, "hello", "--who", "ops")
    assert done.returncode == 0 and done.stdout.strip() == "hello ops", done.stderr
    done = _dr(site, "hello", "--json")
    assert json.loads(done.stdout)["greeted"] == "world"
    listed = _dr(site, "--help")
    assert listed.returncode == 0 and "greet someone (a plugin's command)" in listed.stdout


def test_a_plugin_cannot_replace_a_built_in_nor_load_under_another_name(tmp_path):
    site = _site(tmp_path, {"backup": "acme_cmds:BACKUP", "misnamed": "acme_cmds:WRONG"})
    listed = _dr(site, "--help").stdout
    assert "a plugin's attempt to replace" not in listed and "back up the plan's sources" in listed
    done = _dr(site, "misnamed")
    assert done.returncode == 1 and "declares the name 'other', not 'misnamed'" in done.stderr


def test_a_broken_plugin_command_fails_alone_with_its_reason_and_no_traceback(tmp_path):
    site = _site(tmp_path, {"broken": "acme_broken:SPEC", "hello": "acme_cmds:HELLO"})
    done = _dr(site, "broken")
    assert done.returncode == 1, done.stderr
    assert "acme_broken:SPEC" in done.stderr and "cannot start: no config" in done.stderr
    assert "Traceback" not in done.stderr
    listed = _dr(site, "--help")
    assert listed.returncode == 0 and "failed to load" in listed.stdout and "greet someone" in listed.stdout


def test_a_built_in_command_never_reads_the_plugin_commands():
    done = run_without_entry_points("from dr.cli.main import build_parser\n"
                                    "build_parser(['backup', '--plan', 'p.yaml']); build_parser(['snapshots', '--help'])\n"
                                    "print('ok')")
    assert done.stdout.strip() == "ok", done.stderr
