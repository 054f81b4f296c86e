"""deploy/'s alert rules: both files are made from dr/deploy/prometheus-rules.yaml, the plain rules file is the PrometheusRule's spec, `promtool check
rules` accepts it, `promtool test rules` passes (one unit test or more per alert), and every
metric they name is one dr exports."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess

import yaml

from dr.metrics import METRICS

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEPLOY = os.path.join(ROOT, "deploy")
RESOURCE = os.path.join(DEPLOY, "prometheus-rules.yaml")
RULES = os.path.join(DEPLOY, "prometheus-rules.rules.yaml")
UNIT_TESTS = os.path.join(DEPLOY, "prometheus-rules.test.yaml")
ALERTS = {"DrBackupFailed", "DrBackupMissing", "DrRpoBreached", "DrAuditBlockers", "DrVerifyProblems", "DrStatusProblems",
          "DrJobStale", "DrJobAbsent"}
# What each scheduled command publishes to say it ran: a rule watches each one's staleness and absence
REPORTED = {"backup": "dr_backup_last_success_timestamp_seconds", "prune": "dr_prune_last_success_timestamp_seconds",
            "verify": "dr_verify_last_run_timestamp_seconds", "audit": "dr_audit_last_run_timestamp_seconds",
            "status": "dr_status_last_run_timestamp_seconds"}
NAME = re.compile(r"\bdr_[a-z0-9_]+")


def _load(path):
    with open(path, encoding="utf-8") as handle:
        return yaml.safe_load(handle)


def _rules() -> list[dict]:
    return [rule for group in _load(RULES)["groups"] for rule in group["rules"]]


def metric_names(expression: str) -> set[str]:
    return set(NAME.findall(expression))


def test_the_rules_file_is_made_from_the_prometheusrule():
    resource = _load(RESOURCE)
    assert (resource["apiVersion"], resource["kind"]) == ("monitoring.coreos.com/v1", "PrometheusRule")
    spec = importlib.util.spec_from_file_location("render", os.path.join(ROOT, "scripts", "render-alert-rules"),
                                                  loader=importlib.machinery.SourceFileLoader(
                                                      "render", os.path.join(ROOT, "scripts", "render-alert-rules")))
    render = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(render)
    for path, made in ((RULES, render.rendered()), (RESOURCE, render.resource())):
        with open(path, encoding="utf-8") as handle:
            assert handle.read() == made, "run scripts/render-alert-rules after editing dr/deploy/prometheus-rules.yaml"
    assert _load(RULES) == resource["spec"]


def test_every_alert_the_issue_asks_for_is_there_and_names_only_exported_metrics():
    rules = _rules()
    assert {r["alert"] for r in rules} == ALERTS
    for rule in rules:
        names = metric_names(rule["expr"])
        assert names and names <= set(METRICS), (rule["alert"], names - set(METRICS))


def test_promtool_checks_the_rules():
    run = subprocess.run(["promtool", "check", "rules", RULES], capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
    assert f"SUCCESS: {len(ALERTS)} rules found" in run.stdout


def test_promtool_unit_tests_pass_and_cover_every_alert():
    tested = {case["alertname"] for test in _load(UNIT_TESTS)["tests"] for case in test["alert_rule_test"]
              if case["exp_alerts"]}
    assert tested == ALERTS
    run = subprocess.run(["promtool", "test", "rules", os.path.basename(UNIT_TESTS)], cwd=DEPLOY,
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "SUCCESS" in run.stdout


def test_every_alert_links_an_existing_runbook_and_kube_prometheus_stack_selects_the_rule():
    resource = _load(RESOURCE)
    assert resource["metadata"]["labels"]["release"] == "kube-prometheus-stack"
    for rule in _rules():
        assert "runbook" not in rule["annotations"], rule["alert"]
        assert os.path.isfile(os.path.join(ROOT, rule["annotations"]["runbook_url"])), rule["alert"]


def test_a_command_that_stops_reporting_is_seen():
    """Staleness for the maintenance (backups: DrBackupMissing, against their schedule), and
    absence for every command's metric."""
    rules = {r["alert"]: r["expr"] for r in _rules()}
    assert metric_names(rules["DrJobStale"]) == set(REPORTED.values()) - {REPORTED["backup"]}
    assert "dr_backup_last_success_timestamp_seconds" in metric_names(rules["DrBackupMissing"])
    absent = rules["DrJobAbsent"]
    for command, metric in REPORTED.items():
        assert f'absent_over_time({metric}[' in absent and f'"command", "{command}"' in absent
