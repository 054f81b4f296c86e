"""A run imports only what its plan uses (issue 15, "The cost of an unchanged backup").

Start-up was most of an unchanged backup's time: every command module, every exporter and
their clients (boto3, the kubernetes client, hvac, octoDNS...) were imported by every run. This
guards the gain without timing anything: a fresh interpreter runs dr's real entry point on a
files-only plan with a directory target, twice (the second run is the unchanged backup), and
then lists which heavy modules were imported. A regression (an eager import creeping back)
fails here by name.
"""

from __future__ import annotations

import json
import subprocess
import sys

from tests.cli.planfiles import files_source, local_target, write_plan

HEAVY = ("boto3", "botocore", "kubernetes", "hvac", "mlflow", "octodns", "dns", "git", "requests")

PROBE = """
import json, sys
from dr.cli.main import main
first = main(["backup", "--plan", sys.argv[1], "-q"])
second = main(["backup", "--plan", sys.argv[1], "--json"])
heavy = sorted(m for m in {heavy!r} if m in sys.modules)
exporters = sorted(m for m in sys.modules if m.startswith("dr.exporters.") and m.count(".") == 2)
commands = sorted(m for m in sys.modules if m.startswith("dr.cli.commands."))
print(json.dumps({{"codes": [first, second], "heavy": heavy, "exporters": exporters, "commands": commands}}))
"""


def _probe(code: str, *args: str) -> dict:
    done = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_files_backup_imports_no_client_it_does_not_use(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    (data / "a.txt").write_text("a\n")
    plan = write_plan(tmp_path / "plan.yaml", local_target(tmp_path / "repo"), files_source("config", [str(data)]))
    seen = _probe(PROBE.format(heavy=HEAVY), plan)
    assert seen["codes"] == [0, 0]
    assert seen["heavy"] == []
    # the registry loads the files exporter only; the CLI loads the backup command only
    # (pod_needs is part of the contract, a module of its own)
    assert seen["exporters"] == ["dr.exporters.adapters", "dr.exporters.contract", "dr.exporters.files",
                                 "dr.exporters.pod_needs", "dr.exporters.registry"]
    assert seen["commands"] == ["dr.cli.commands.backup"]


def test_help_imports_no_command_and_no_library():
    seen = _probe("import sys, json\nfrom dr.cli.main import build_parser\nbuild_parser(['--help'])\n"
                  "print(json.dumps(sorted(m for m in sys.modules if m.startswith(('dr.', 'pydantic', 'boto')))))")
    assert seen == ["dr.cli", "dr.cli.commands", "dr.cli.exitcodes", "dr.cli.main"]
