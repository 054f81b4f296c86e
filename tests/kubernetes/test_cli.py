"""`dr backup` and `dr restore` with a plan naming a kubernetes source, through dr.cli.main.main."""

from __future__ import annotations

import json
import os

from dr.cli.exitcodes import Exit
from dr.cli.main import main
from dr.repository.encryption import generate_identity
from tests.cli.planfiles import local_target, write_plan

SOURCE = """  - name: cluster
    type: kubernetes
    kubeconfig: kubeconfig
    context: source
    workload_kinds: [Deployment, CronJob]
    page_size: 50
"""


def _write_plan(tmp_path, recipient: str):
    return write_plan(tmp_path / "plan.yaml", local_target(tmp_path / "repo"), SOURCE, [recipient])


def test_backup_and_restore_from_the_command_line(tmp_path, kubeconfig, dest, capsys):
    identity, recipient = generate_identity()
    (tmp_path / "identity.txt").write_text(identity + "\n")
    plan = _write_plan(tmp_path, recipient)
    assert os.path.basename(kubeconfig) == "kubeconfig"  # the plan names it relative to its folder

    assert main(["backup", "--plan", str(plan), "--json"]) == Exit.OK
    result = json.loads(capsys.readouterr().out)["results"][0]
    [source] = result["sources"]
    assert not source.get("error")
    assert any(f["code"] == "kueue-flavor-missing" for f in source["findings"])

    restore = ["restore", "--plan", str(plan), "--source", "cluster", "--to", f"{kubeconfig}:dest",
               "--identity", str(tmp_path / "identity.txt"), "--json"]
    assert main(restore + ["--dry-run"]) == Exit.OK
    planned = json.loads(capsys.readouterr().out)["counts"]
    assert set(planned) == {"planned", "skipped"} and dest.get_object("v1", "Namespace", "team-a") is None

    assert main(restore) == Exit.OK
    counts = json.loads(capsys.readouterr().out)["counts"]
    assert counts["restored"] == planned["planned"] - counts.get("unchanged", 0)
    assert dest.get_object("v1", "Secret", "db", "team-a") is not None

    assert main(restore) == Exit.OK
    assert set(json.loads(capsys.readouterr().out)["counts"]) == {"unchanged", "skipped"}


def test_restore_to_an_unknown_context_fails_with_a_reason(tmp_path, kubeconfig, capsys):
    identity, recipient = generate_identity()
    plan = _write_plan(tmp_path, recipient)
    assert main(["backup", "--plan", str(plan), "-q"]) == Exit.OK
    capsys.readouterr()
    code = main(["restore", "--plan", str(plan), "--source", "cluster", "--to", "nowhere", "--json"])
    assert code == Exit.FAILURE
    outcomes = json.loads(capsys.readouterr().out)["outcomes"]
    assert outcomes[-1]["item"] == "destination" and "nowhere" in outcomes[-1]["reason"]


def test_status_and_audit_show_what_the_backup_noticed(tmp_path, kubeconfig, capsys):
    """The dangling ResourceFlavor the backup records is in dr status and in every audit format."""
    identity, recipient = generate_identity()
    plan = str(_write_plan(tmp_path, recipient))
    assert main(["backup", "--plan", plan, "-q"]) == Exit.OK
    capsys.readouterr()
    main(["status", "--plan", plan, "--json"])
    [row] = json.loads(capsys.readouterr().out)["sources"]
    flavor = [f for f in row["findings"] if f["code"] == "kueue-flavor-missing"]
    assert flavor and flavor[0]["severity"] == "warning" and flavor[0]["object"].startswith("ClusterQueue/")
    main(["status", "--plan", plan])
    assert f"kueue-flavor-missing {flavor[0]['object']}" in capsys.readouterr().out
    main(["audit", "--plan", plan, "--json"])
    found = [f for f in json.loads(capsys.readouterr().out)["findings"] if f["code"] == "backup-finding"]
    assert {"source": "cluster", "code": "kueue-flavor-missing", "severity": "warning",
            "object": flavor[0]["object"]} in [f["backup"] for f in found]
