"""The three reports: Markdown, JSON (checked against docs/audit-json.md) and HTML with the graph."""

from __future__ import annotations

import html
import json
import os
import re
import shutil

import pytest

from dr.audit.declared import declared
from dr.audit.findings import CODES
from dr.audit.reports_html import render_html
from dr.audit.reports_json import render_json, to_document
from dr.audit.reports_md import LIMIT, render_markdown
from tests.audit import worlds

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HOSTILE = "https://evil.svc.cluster.local/<script>alert(1)</script>|`x`*[y](z)"
SECRET_URL = "https://deploy:hunter2@git.gitea.svc.cluster.local/platform/secret.git"


@pytest.fixture
def report(world):
    contents = dict(worlds.PLANTED)
    contents["platform-k8s"] = contents["platform-k8s"] + [
        ("configmap", "odd/one", [worlds.dep("url", HOSTILE), worlds.dep("git-remote", SECRET_URL)])]
    world.backup(contents)
    return world.audit()


def documented_objects() -> dict[str, set[str]]:
    """'### `object`' headings and the `key` cells of the table under each."""
    text = open(os.path.join(ROOT, "docs", "audit-json.md"), encoding="utf-8").read()
    text = text.split("## Finding codes")[0]
    objects: dict[str, set[str]] = {}
    for section in re.split(r"^### ", text, flags=re.M)[1:]:
        name = re.match(r"`([^`]+)`", section).group(1)
        objects[name] = set(re.findall(r"^\| `([a-z_]+)` \|", section, flags=re.M))
    return objects


def test_json_has_exactly_the_documented_keys(report):
    doc = json.loads(render_json(report))
    documented = documented_objects()
    assert set(doc) == documented["report"]
    assert set(doc["plan"]) == documented["plan"]
    assert set(doc["snapshot"]) == documented["snapshot"]
    assert set(doc["summary"]) == documented["summary"]
    assert doc["scenarios"] and doc["findings"]
    for scenario in doc["scenarios"]:
        assert set(scenario) == documented["scenario"]
        assert set(scenario["dependencies"]) == documented["dependency verdicts"]
    for finding in doc["findings"]:
        assert set(finding) == documented["finding"]
        assert finding["runbook"] == f"runbooks/{finding['code']}.md"


def test_json_has_one_finding_per_line(report):
    lines = [line.strip().rstrip(",") for line in render_json(report).splitlines()
             if line.startswith('    {"action"')]
    assert len(lines) == len(report.findings)
    assert [json.loads(line)["code"] for line in lines] == [f.code for f in report.findings]


def test_json_documents_every_finding_code():
    declared()  # the installed exporters' codes are documented there too
    text = open(os.path.join(ROOT, "docs", "audit-json.md"), encoding="utf-8").read()
    table = text.split("## Finding codes")[1]
    assert set(re.findall(r"^\| `([a-z-]+)` \|", table, flags=re.M)) == set(CODES)


def test_json_without_a_snapshot_keeps_every_key(world):
    doc = to_document(world.audit())
    assert doc["snapshot"] is None and doc["schema_version"] == 1
    assert set(doc) == documented_objects()["report"]


def test_json_counts_and_order(report):
    doc = to_document(report)
    assert doc["summary"] == {"blocked": True, "blockers": report.blockers,
                              "warnings": report.warnings, "info": report.infos}
    scenarios = [f["scenario"] for f in doc["findings"]]
    assert scenarios == sorted(scenarios, key=lambda s: [None, "train-eu1", "eu-west-1"].index(s))
    assert doc["snapshot"]["references"] == 15 and doc["snapshot"]["artifacts"] == 11


def test_markdown_leads_with_the_verdict_and_lists_every_blocker(report):
    text = render_markdown(report)
    assert text.startswith("# DR audit of plan `ml-platform`: BLOCKED")
    assert "| train-eu1 (cluster) fails | train-eu1 | dr-us |" in text
    for reference in (worlds.IN_CLUSTER_IMAGE, worlds.CHART_REPO, worlds.VAULT, worlds.CKPT_BUCKET):
        assert reference in text
    assert "[registry-in-failed-domain](runbooks/registry-in-failed-domain.md)" in text
    assert "## Scenario: eu-west-1 (region) fails" in text


def test_markdown_escapes_references_and_redacts_credentials(report):
    text = render_markdown(report)
    assert "<script>" not in text and "[y](z)" not in text
    assert "hunter2" not in text and "git.gitea.svc.cluster.local/platform/secret.git" in text


def test_markdown_abbreviates_long_lists_but_json_keeps_everything(world):
    registry = "registry.kube-system.svc.cluster.local:5000"
    images = [("deployment", f"team/app-{i}", [worlds.dep("image", f"{registry}/app-{i}:v1")])
              for i in range(LIMIT + 7)]
    world.backup({"platform-k8s": images})
    report = world.audit(failed=["train-eu1"])
    assert "and 7 more image-in-failed-domain finding(s)" in render_markdown(report)
    assert sum(f["code"] == "image-in-failed-domain" for f in to_document(report)["findings"]) == LIMIT + 7


def test_html_opens_with_the_graph_then_the_findings_table(report):
    # Graphviz is installed by scripts/install-test-deps: missing here is a failure, not a skip
    assert shutil.which("dot"), "Graphviz 'dot' is missing: run scripts/install-test-deps"
    text = render_html(report)
    assert text.count("<svg") == 2  # one picture per scenario
    assert text.index("<svg") < text.index('id="findings"')
    svg = html.unescape(text[text.index("<svg"):text.index("</svg>")])  # dot writes '-' as &#45;
    assert "train-eu1 (cluster): FAILED" in svg  # the failed domain drawn as a region
    assert "#c62828" in svg  # blockers in red
    assert "remap: restore from platform-git/repository/declarations" in svg
    assert 'href="runbooks/image-in-failed-domain.md"' in text
    assert text.index('<tr class="blocker">') < text.index('<tr class="warning">')  # blockers lead


def test_html_escapes_everything_and_redacts(report):
    text = render_html(report)
    assert "<script>" not in text
    assert "&lt;script&gt;" in text
    assert "hunter2" not in text


def test_html_without_graphviz_says_so_and_keeps_the_findings(report):
    text = render_html(report, dot_program="/nonexistent/dot")
    assert "<svg" not in text
    assert "is not installed" in text and "apt-get install graphviz" in text
    assert 'id="findings"' in text and "digraph restore" in text  # the DOT source, to draw elsewhere
    assert "<script>" not in text
