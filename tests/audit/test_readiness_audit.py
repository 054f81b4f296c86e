"""`dr audit --readiness`: readiness findings recorded by a real backup of an emulated cluster.

The cluster (kmock, tests/harness) holds the upstream Kueue and LWS CRDs and examples, a
minimal KServe InferenceService CRD, and the hand-written cases of
tests/kubernetes/readiness_objects.py (each problem and its twin). `dr backup` runs the
kubernetes exporter through the CLI; the audit reads only the snapshot. The HTML report is
opened in Debian's headless Chromium (installed by scripts/install-test-deps).
"""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from dr.cli.exitcodes import Exit
from dr.cli.main import main
from dr.repository.encryption import generate_identity
from tests.audit.test_html_in_browser import FLAGS, _chromium
from tests.audit.test_reports import documented_objects
from tests.cli.planfiles import local_target, write_plan
from tests.harness import EmulatedCluster, write_kubeconfig
from tests.kubernetes import readiness_objects as objects
from tests.kubernetes.upstream import upstream_crds, wait_established

SOURCE = """  - name: cluster
    type: kubernetes
    kubeconfig: kubeconfig
    context: source
    include_groups: [kueue.x-k8s.io, leaderworkerset.x-k8s.io, serving.kserve.io]
    readiness:
      serving: [serving/named-by-plan, serving/leaderworkerset-sample]
      zones: true
      spot_notice_seconds: {other: 60}
"""


@pytest.fixture(scope="module")
def backed_up(tmp_path_factory):
    """A plan whose one source backed up the readiness cluster once: (plan path, folder)."""
    root = tmp_path_factory.mktemp("readiness")
    cluster = EmulatedCluster(name="readiness").start()
    try:
        crds = [c for c in upstream_crds() if c["spec"]["group"] != "cert-manager.io"]
        crds += [objects.INFERENCE_SERVICE_CRD]
        cluster.create_objects(crds)
        wait_established(cluster, crds)
        cluster.create_objects(objects.all_objects())
        write_kubeconfig(os.path.join(root, "kubeconfig"), {"source": cluster})
        _, recipient = generate_identity()
        plan = write_plan(root / "plan.yaml", local_target(root / "repo"), SOURCE, [recipient])
        assert main(["backup", "--plan", plan, "-q"]) == Exit.OK
        yield plan, root
    finally:
        errors = cluster.errors
        cluster.stop()
        assert errors == []


def _audit(capsys, plan: str, *extra: str) -> tuple[int, str]:
    capsys.readouterr()
    code = main(["audit", "--plan", plan, *extra])
    return code, capsys.readouterr().out


def test_the_readiness_scenario_lists_every_finding_with_its_runbook(backed_up, capsys):
    plan, _ = backed_up
    code, out = _audit(capsys, plan, "--readiness", "--json")
    doc = json.loads(out)
    assert code == Exit.OK and doc["summary"]["blocked"] is False  # readiness findings are warnings
    found = [f for f in doc["findings"] if f["code"] == "readiness-finding"]
    assert {(f["kind"], f["reference"]) for f in found} == objects.EXPECTED  # every twin left alone
    assert all(f["scenario"] == "readiness" and f["severity"] == "warning" and f["sources"] == ["cluster"]
               and f["runbook"] == f"runbooks/{f['kind']}.md" and f["backup"]["code"] == f["kind"] for f in found)
    assert set(doc["readiness"]) == documented_objects()["readiness"]
    assert doc["readiness"]["shown"] is True and doc["readiness"]["recorded"] == len(found)
    assert doc["readiness"]["codes"]["pdb-blocks-drain"] == 4
    assert not [f for f in doc["findings"] if f["code"] == "backup-finding" and f["kind"].startswith(("pdb-", "spot-"))]
    assert doc["findings"][-len(found):] == found  # the readiness scenario comes after the others


def test_without_the_flag_they_are_counted_not_listed(backed_up, capsys):
    plan, _ = backed_up
    code, out = _audit(capsys, plan, "--json")
    doc = json.loads(out)
    listed = json.loads(_audit(capsys, plan, "--readiness", "--json")[1])["findings"]
    recorded = len([f for f in listed if f["code"] == "readiness-finding"])
    assert code == Exit.OK and doc["readiness"]["shown"] is False
    # two replicas unspread on both hostname and zone are two findings on one object
    assert doc["readiness"]["recorded"] == recorded == len(objects.EXPECTED) + 2
    assert not [f for f in doc["findings"] if f["code"] == "readiness-finding" or f["scenario"] == "readiness"]
    assert len(doc["findings"]) == len(listed) - recorded
    _, text = _audit(capsys, plan)
    assert f"The snapshot records {recorded} readiness finding(s)" in text
    assert "`dr audit --readiness` lists them" in text


def test_strict_makes_them_blockers_also_in_the_metrics(backed_up, capsys, tmp_path):
    plan, _ = backed_up
    metrics = tmp_path / "audit.prom"
    code, out = _audit(capsys, plan, "--readiness", "--strict", "--json", "--metrics-file", str(metrics))
    doc = json.loads(out)
    assert code == Exit.BLOCKERS and doc["summary"]["blocked"] is True
    blockers = [f for f in doc["findings"] if f["severity"] == "blocker" and f["scenario"] == "readiness"]
    assert {f["code"] for f in blockers} == {"readiness-finding"}
    assert len(blockers) == doc["readiness"]["recorded"]  # every readiness warning
    readiness = [line for line in metrics.read_text().splitlines()
                 if line.startswith("dr_audit_blockers{") and 'scenario="readiness"' in line]
    assert len(readiness) == 1 and float(readiness[0].split()[-1]) == len(blockers)


def test_markdown_lists_them_with_runbook_links(backed_up, capsys):
    plan, _ = backed_up
    _, text = _audit(capsys, plan, "--readiness")
    section = text.split("## Readiness (go-live checks)")[1]
    assert "[readiness-finding](runbooks/pdb-overlap.md)" in section
    assert "`pdb-overlap` (warning) on `Deployment/pdbs/shared`" in section
    assert "[readiness-finding](runbooks/spot-grace-too-short.md)" in section and "Job/train/spot-naive" in section
    assert "llm-ok" not in section and "aws-ok" not in section and "spot-ready" not in section


def test_the_html_report_shows_them_in_a_browser(backed_up, capsys, tmp_path):
    plan, _ = backed_up
    page = tmp_path / "readiness.html"
    assert main(["audit", "--plan", plan, "--readiness", "--format", "html", "--out", str(page), "-q"]) == Exit.OK
    dom = subprocess.run([_chromium(), *FLAGS, f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom",
                          page.as_uri()], capture_output=True, text=True, timeout=120, check=True).stdout
    assert 'href="runbooks/serving-replicas-not-independent.md"' in dom
    assert "<code>InferenceService/serving/isvc-default</code>" in dom
    assert '<p id="readiness">' in dom and "<code>pdb-blocks-drain</code>: 4" in dom
    assert "isvc-ok" not in dom
