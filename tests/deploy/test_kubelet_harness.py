"""The day harness's own checks can fail: a request outside the rendered RBAC is reported (a verb
taken out of the ClusterRole makes the same request a denial), and the alert rules scaled for a
compressed day are still rules promtool accepts, with every duration divided."""

from __future__ import annotations

import subprocess

import yaml

from tests.deploy.conftest import documents, render
from tests.harness import RequestRecord
from tests.harness.day import scaled_rules
from tests.harness.kubelet import rbac_denials
from tests.metrics.test_alert_rules import RESOURCE


def _list(resource: str, group: str | None, namespace: str | None, verb: str = "list") -> RequestRecord:
    return RequestRecord("GET", f"/{resource}", {}, verb, group=group, resource=resource, namespace=namespace)


def test_a_request_outside_the_rendered_rbac_is_denied(wide_plan, capsys):
    code, out, err = render(["--plan", wide_plan], capsys)
    assert code == 0, err
    docs = documents(out)
    allowed = [_list("deployments", "apps", "team-a"), _list("configmaps", None, "team-b"),
               RequestRecord("GET", "/apis", {}, "get")]  # discovery: no resource
    assert rbac_denials(docs, "dr-backup", allowed) == []
    assert rbac_denials(docs, "dr-backup", [_list("deployments", "apps", "team-a", verb="delete")]) == [
        "delete apps/deployments in team-a"]
    assert rbac_denials(docs, "someone-else", allowed[:1]) == ["list apps/deployments in team-a"]
    for role in (d for d in docs if d["kind"] == "ClusterRole"):
        for rule in role["rules"]:
            rule["verbs"] = [v for v in rule["verbs"] if v != "list"]
    assert rbac_denials(docs, "dr-backup", allowed[:2]) == [
        "list apps/deployments in team-a", "list core/configmaps in team-b"]


def test_scaled_rules_are_rules_with_every_duration_divided(tmp_path):
    with open(RESOURCE, encoding="utf-8") as handle:
        rules = scaled_rules(yaml.safe_load(handle), 450)
    path = tmp_path / "rules.yaml"
    path.write_text(yaml.safe_dump(rules))
    checked = subprocess.run(["promtool", "check", "rules", str(path)], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    by_name = {r["alert"]: r for g in rules["groups"] for r in g["rules"]}
    assert by_name["DrJobAbsent"]["for"] == "8s"
    assert "[192s]" in by_name["DrJobAbsent"]["expr"] and "[384s]" in by_name["DrJobAbsent"]["expr"]
    assert "> 2 * 192" in by_name["DrJobStale"]["expr"] and "> 8" in by_name["DrJobStale"]["expr"]
    assert "(dr_backup_schedule_interval_seconds / 450)" in by_name["DrBackupMissing"]["expr"]
