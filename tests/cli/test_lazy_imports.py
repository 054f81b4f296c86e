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
import os
import subprocess
import sys

from tests.cli.planfiles import files_source, local_target, s3_target, write_plan

HEAVY = ("boto3", "botocore", "kubernetes", "hvac", "mlflow", "octodns", "dns", "git", "requests")

PROBE = """
import json, sys
from dr.cli.main import main
first = main(["backup", "--plan", sys.argv[1], "-q"])
second = main(["backup", "--plan", sys.argv[1], "--json"])
heavy = sorted(m for m in {heavy!r} if m in sys.modules)
exporters = sorted(m for m in sys.modules if m.startswith("dr.exporters.") and m.count(".") == 2)
commands = sorted(m for m in sys.modules if m.startswith("dr.cli.commands."))
# pydantic never read the installed distributions' entry points for plugins: dr turns them off
plugins_scanned = sys.modules["pydantic.plugin._loader"]._plugins is not None
print(json.dumps({{"codes": [first, second], "heavy": heavy, "exporters": exporters, "commands": commands,
                  "plugins_scanned": plugins_scanned}}))
"""


# Not used by a backup of a plan without schedules, to a target with static keys: botocore and
# its kin (the lean S3 client makes the store's requests), croniter (schedules are checked only
# when a plan has them, and turned into metrics only when metrics are published), tqdm (no
# progress bar off a terminal).
S3_UNUSED = ("boto3", "botocore", "s3transfer", "urllib3", "jmespath", "croniter", "dateutil", "tqdm")


def _probe(code: str, *args: str, env: dict | None = None) -> dict:
    done = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=120,
                          env=env)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_files_backup_imports_no_client_it_does_not_use(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    (data / "a.txt").write_text("a\n")
    plan = write_plan(tmp_path / "plan.yaml", local_target(tmp_path / "repo"), files_source("config", [str(data)]))
    seen = _probe(PROBE.format(heavy=HEAVY + S3_UNUSED), plan)
    assert seen["codes"] == [0, 0]
    assert seen["heavy"] == []
    # the registry loads the files exporter only (the contract is dr.contract, outside
    # dr.exporters); the CLI loads the backup command only
    assert seen["exporters"] == ["dr.exporters.files"]
    assert seen["commands"] == ["dr.cli.commands.backup"]
    assert seen["plugins_scanned"] is False


def test_help_imports_no_command_and_no_library():
    seen = _probe("import sys, json\nfrom dr.cli.main import build_parser\nbuild_parser(['--help'])\n"
                  "print(json.dumps(sorted(m for m in sys.modules if m.startswith(('dr.', 'pydantic', 'boto')))))")
    # --help also lists plugin commands (dr.cli.plugin_commands reads the dr.commands group)
    assert seen == ["dr.cli", "dr.cli.commands", "dr.cli.exitcodes", "dr.cli.main", "dr.cli.plugin_commands"]


def test_an_s3_backup_with_static_keys_imports_no_botocore(tmp_path, aws_env, s3_bucket, moto_endpoint):
    """The unchanged backup of issue 15's benchmark: a files source to an S3 target, keys in
    the environment. The lean client makes every request, so botocore is never imported."""
    data = tmp_path / "data"
    data.mkdir()
    (data / "a.txt").write_text("a\n")
    bucket = s3_bucket("eu-west-1")
    plan = write_plan(tmp_path / "plan.yaml", s3_target(bucket, moto_endpoint), files_source("config", [str(data)]))
    seen = _probe(PROBE.format(heavy=HEAVY + S3_UNUSED), plan, env=dict(os.environ))
    assert seen["codes"] == [0, 0]
    assert seen["heavy"] == []


def test_a_checkpoint_backup_between_local_disks_imports_no_s3_client(tmp_path):
    """Checkpoints on a shared filesystem copied to another mount: the checkpoints exporter's S3
    places load boto3, botocore and urllib3 only when a plan has an S3 place (~0.3 s of every
    start otherwise, `dr audit` of such a plan included), and dr reads DCP's index without torch."""
    from tests.checkpoints.test_exporter_helpers import save_steps

    save_steps(tmp_path / "runs", "llama", [100], single_file_per_rank=False)
    source = (f"  - name: training\n    type: checkpoints\n    roots: [\"{tmp_path / 'runs'}\"]\n"
              f"    dr_copy: \"{tmp_path / 'dr-copy'}\"\n    settle_seconds: 0\n")
    plan = write_plan(tmp_path / "plan.yaml", local_target(tmp_path / "repo"), source)
    seen = _probe(PROBE.format(heavy=HEAVY + S3_UNUSED + ("torch",)), plan)
    assert seen["codes"] == [0, 0]
    assert seen["heavy"] == []
    assert "dr.exporters.checkpoints" in seen["exporters"]
    assert (tmp_path / "dr-copy").is_dir()  # the copy was made: the exporter ran, not just loaded


def test_validating_aws_sources_loads_no_aws_client():
    """Plan validation (every command, `dr audit` of a pull request's plan in CI) loads each
    exporter its plan names for the options model; the AWS exporters import boto3 only when
    they first call AWS."""
    code = ("import sys, json\nfrom dr.contract.registry import Registry\nregistry = Registry()\n"
            "models = [registry.options_model(n).__name__ for n in ('certificates', 'secretsmanager', 'checkpoints')]\n"
            "print(json.dumps({'models': models, 'heavy': sorted(m for m in ('boto3', 'botocore', 'urllib3') "
            "if m in sys.modules)}))")
    seen = _probe(code)
    assert len(seen["models"]) == 3
    assert seen["heavy"] == []


def test_an_audit_loads_only_the_exporters_of_its_plan_and_snapshot(tmp_path):
    """The audit merges the exporters' declared finding codes (dr.audit.declared) from the plan's
    and the snapshot's source types only: importing all twelve built-ins would cost `dr audit` in
    CI about a second."""
    data = tmp_path / "data"
    data.mkdir()
    (data / "a.txt").write_text("a\n")
    plan = write_plan(tmp_path / "plan.yaml", local_target(tmp_path / "repo"), files_source("config", [str(data)]))
    code = ("import sys, json\nfrom dr.cli.main import main\nmain(['backup', '--plan', sys.argv[1], '-q'])\n"
            "audited = main(['audit', '--plan', sys.argv[1], '--json', '--out', sys.argv[2]])\n"
            "print(json.dumps({'audited': audited, 'exporters': sorted(m for m in sys.modules if "
            "m.startswith('dr.exporters.') and m.count('.') == 2)}))")
    seen = _probe(code, plan, str(tmp_path / "audit.json"))
    assert seen["audited"] in (0, 4)
    assert [m for m in seen["exporters"] if m.split(".")[2] in BUILTIN_TYPES] == ["dr.exporters.files"]


BUILTIN_TYPES = ("certificates", "checkpoints", "dns", "etcd", "files", "git", "helm", "images", "kubernetes",
                 "mlflow", "secretsmanager", "vault")


def test_the_volume_mover_starts_on_the_standard_library_alone():
    """The mover runs in the volume's pod (dr.exporters.volumes.mover): importing it must not
    pull in the exporter's contract, pydantic or a client (they were 0.11 s of its start)."""
    probe = ("import sys, dr.exporters.volumes.mover\n"
             "print(sorted(m for m in sys.modules if m.split('.')[0] in ('dr', 'pydantic', 'yaml', 'urllib3')"
             " or m.split('.')[0] in " + repr(HEAVY) + "))")
    loaded = json.loads(subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                                       check=True).stdout.replace("'", '"'))
    assert loaded == ["dr", "dr.exporters", "dr.exporters.volumes", "dr.exporters.volumes.mover",
                      "dr.exporters.volumes.movertree", "dr.exporters.volumes.staging",
                      "dr.exporters.volumes.wire", "dr.kits", "dr.kits.buffers", "dr.kits.syncing"]
