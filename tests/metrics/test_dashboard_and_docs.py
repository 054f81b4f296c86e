"""The Grafana dashboard queries only metrics dr exports, and docs/metrics.md documents every
one of them with its labels and the commands that take the options."""

from __future__ import annotations

import json
import os
import re

from dr.metrics import METRICS
from dr.metrics.schedules import longest_gap_seconds
from tests.metrics.test_alert_rules import ROOT, metric_names

DASHBOARD = os.path.join(ROOT, "deploy", "grafana-dashboard.json")
DOC = os.path.join(ROOT, "docs", "metrics.md")


def dashboard_queries() -> list[str]:
    with open(DASHBOARD, encoding="utf-8") as handle:
        board = json.load(handle)
    queries = [t["expr"] for panel in board["panels"] for t in panel["targets"]]
    queries += [v["definition"] for v in board["templating"]["list"] if v["type"] == "query"]
    return queries


def test_every_dashboard_query_names_only_exported_metrics():
    queries = dashboard_queries()
    used = set().union(*(metric_names(q) for q in queries))
    assert all(metric_names(q) for q in queries)
    assert used <= set(METRICS), used - set(METRICS)
    # the measurements each have a panel
    assert {"dr_backup_duration_seconds", "dr_backup_read_bytes", "dr_backup_uploaded_bytes",
            "dr_backup_reused_bytes", "dr_backup_artifacts", "dr_backup_findings", "dr_rpo_age_seconds",
            "dr_rpo_objective_seconds", "dr_audit_blockers", "dr_drill_rto_seconds"} <= used


def test_docs_list_every_metric_with_its_labels():
    with open(DOC, encoding="utf-8") as handle:
        text = handle.read()
    rows = {m.group(1): m.group(2) for m in re.finditer(r"^\| `(dr_[a-z0-9_]+)` \| ([^|]*) \|", text, re.M)}
    assert set(rows) == set(METRICS)
    for name, metric in METRICS.items():
        assert [label.strip(" `") for label in rows[name].split(",")] == list(metric.labels), name


def test_the_longest_gap_of_a_schedule():
    assert longest_gap_seconds("0 * * * *") == 3600
    assert longest_gap_seconds("*/15 * * * *") == 900
    assert longest_gap_seconds("30 2 * * 0") == 7 * 86400
    assert longest_gap_seconds("0 9 * * 1-5") == 72 * 3600
