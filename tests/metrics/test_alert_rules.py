"""deploy/'s alert rules: the plain rules file is the PrometheusRule's spec, `promtool check
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
ALERTS = {"DrBackupFailed", "DrBackupMissing", "DrRpoBreached", "DrAuditBlockers", "DrVerifyProblems"}
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
    with open(RULES, encoding="utf-8") as handle:
        assert handle.read() == render.rendered(), "run scripts/render-alert-rules after editing the PrometheusRule"
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
