"""`*.svc` names, judged by the state behind them (issue 25, item 6), end to end.

A Service DNS name resolves in whatever cluster the pod runs in, so losing the cluster loses the
name only when what lies behind it cannot be brought back. In an emulated cluster, an API
Deployment names three Services by DNS: `db` in front of a StatefulSet with volumeClaimTemplates
(its data is not in the snapshot: a blocker when cluster-a is lost, naming the PVC), `cache` in
front of a stateless Deployment (recreated by the restore: info, no blocker, with the reason),
and `ghost`, a Service the snapshot does not hold (today's verdict: a blocker).
"""

from __future__ import annotations

import json

from tests.audit.test_coverage import dr  # noqa: F401  (dr is a fixture)
from tests.audit.test_dependency_truth import cluster_and_audit

IMAGE = "docker.io/library/busybox:1.36"
KINDS = ["Deployment", "StatefulSet", "DaemonSet", "Job", "CronJob", "Pod", "Service"]
DB, CACHE, GHOST = (f"{name}.ml.svc.cluster.local" for name in ("db", "cache", "ghost"))


def _template(app: str, **spec) -> dict:
    return {"metadata": {"labels": {"app": app, "tier": "backend"}},
            "spec": {"containers": [{"name": "main", "image": IMAGE, **spec}]}}


def deployment(name: str, **spec) -> dict:
    """A Deployment of namespace ml whose pods carry app=<name>; spec goes to its container."""
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": "ml"},
            "spec": {"selector": {"matchLabels": {"app": name}}, "template": _template(name, **spec)}}


def service(name: str, app: str) -> dict:
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": "ml"},
            "spec": {"selector": {"app": app}, "ports": [{"port": 80}]}}


def _objects() -> list[dict]:
    env = [{"name": "DB_HOST", "value": "db.ml.svc:5432"}, {"name": "CACHE_HOST", "value": "cache.ml.svc"},
           {"name": "QUEUE_HOST", "value": "ghost.ml.svc.cluster.local"}]
    claim = {"metadata": {"name": "data"}, "spec": {"accessModes": ["ReadWriteOnce"],
                                                     "resources": {"requests": {"storage": "1Gi"}}}}
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ml"}},
        {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "db", "namespace": "ml"},
         "spec": {"serviceName": "db", "replicas": 1, "selector": {"matchLabels": {"app": "db"}},
                  "template": _template("db"), "volumeClaimTemplates": [claim]}},
        deployment("cache"), deployment("api", env=env),
        service("db", "db"), service("cache", "cache"),
    ]


cluster, audited = cluster_and_audit(_objects, KINDS)


def _in(document: dict, scenario: str, reference: str) -> list[dict]:
    return [f for f in document["findings"] if f["scenario"] == scenario and f["reference"] == reference]


def test_a_service_in_front_of_volume_state_is_a_blocker_naming_the_claim(audited):
    _, document = audited
    [finding] = _in(document, "cluster-a", DB)
    assert finding["severity"] == "blocker", finding
    assert (f"the state behind service {DB} (PVC data-db-0 of StatefulSet ml/db) lives only in the lost cluster"
            in finding["message"]), finding["message"]


def test_a_service_in_front_of_stateless_backends_is_recreated_not_a_blocker(audited):
    code, document = audited
    [finding] = _in(document, "cluster-a", CACHE)
    assert finding["severity"] == "info" and finding["code"] == "dependency-remapped", finding
    assert "recreated by the restore" in finding["message"] and "Deployment ml/cache" in finding["message"], finding
    assert not [f for f in document["findings"] if f["reference"] == CACHE and f["severity"] != "info"]


def test_a_service_the_snapshot_lacks_keeps_its_verdict(audited):
    _, document = audited
    [finding] = _in(document, "cluster-a", GHOST)
    assert finding["severity"] == "blocker" and "state behind" not in finding["message"], finding
    # a region loss takes cluster-a with it: the same verdicts there
    assert [f["severity"] for f in _in(document, "eu-west-1", DB)] == ["blocker"]


def test_the_restore_plan_gives_the_audits_verdicts(audited, dr, capsys, tmp_path):  # noqa: F811
    """One engine, one answer (issue 25, item 4): the needs of the whole-plan restore's step say
    what the audit says about each Service name, with the same reason."""
    capsys.readouterr()
    dr(["restore", "--plan", str(tmp_path / "plan.yaml"), "--failed", "cluster-a", "--dry-run", "--json"])
    [step] = [s for s in json.loads(capsys.readouterr().out)["steps"] if s["name"] == "cluster"]
    needs = {n["reference"]: n for n in step["needs"]}
    assert needs[DB]["verdict"] == "blocker", needs[DB]
    assert "the state behind service" in needs[DB]["reason"] and "PVC data-db-0" in needs[DB]["reason"], needs[DB]
    assert needs[CACHE]["verdict"] == "remapped" and "recreated by the restore" in needs[CACHE]["reason"], needs[CACHE]
    assert not [n for n in step["needs"] if n["kind"].startswith("service-state")]
