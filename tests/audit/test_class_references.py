"""Class references are findings named as such (issue 25, item 6), end to end.

An emulated cluster holds workloads naming a PriorityClass, a RuntimeClass, a StorageClass (a
StatefulSet's volumeClaimTemplate, a PVC) and an IngressClass (spec.ingressClassName, and the
deprecated annotation). Some of the classes exist, and are backed up; the others do not. `dr
backup` records one `class-missing` finding per missing class, naming the referrer, the field,
the class and what admission or the controller does without it; `dr audit` shows it as a
backup-finding and never calls the class an unknown location. The classes that exist give no
finding, and a built-in PriorityClass is no dependency at all.
"""

from __future__ import annotations

from dr.audit import choose_audited_target, run_audit, scenarios_for
from dr.contract.registry import Registry
from dr.exporters.kubernetes import KubernetesExporter
from dr.exporters.kubernetes.classes import CLASSES
from dr.model.plan_loading import load_plan
from dr.planner.planning import planning_exporters
from dr.repository.catalogs import read_catalog_records
from dr.repository.repositories import Repository
from dr.repository.stores.local import LocalStore
from tests.audit.test_coverage import dr  # noqa: F401  (dr is a fixture)
from tests.audit.test_dependency_truth import cluster_and_audit

IMAGE = "docker.io/library/busybox:1.36"
KINDS = ["Deployment", "StatefulSet", "DaemonSet", "Job", "CronJob", "Pod", "Ingress", "PersistentVolumeClaim",
         "Service"]


def _pod(**spec) -> dict:
    return {"metadata": {"labels": {"app": "x"}},
            "spec": {"containers": [{"name": "main", "image": IMAGE}], **spec}}


def _deployment(name: str, **spec) -> dict:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": "ml"},
            "spec": {"selector": {"matchLabels": {"app": "x"}}, "template": _pod(**spec)}}


def _ingress(name: str, spec: dict | None = None, annotations: dict | None = None) -> dict:
    meta = {"name": name, "namespace": "ml", **({"annotations": annotations} if annotations else {})}
    backend = {"service": {"name": "web", "port": {"number": 80}}}
    return {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": meta,
            "spec": {**(spec or {}), "defaultBackend": backend}}


def _objects() -> list[dict]:
    claim = {"metadata": {"name": "data"}, "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "fast-ssd",
                                                     "resources": {"requests": {"storage": "1Gi"}}}}
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ml"}},
        {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "batch-low"},
         "value": 100},
        {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": "runc"}, "handler": "runc"},
        {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "standard"},
         "provisioner": "ebs.csi.aws.com"},
        {"apiVersion": "networking.k8s.io/v1", "kind": "IngressClass", "metadata": {"name": "internal"},
         "spec": {"controller": "k8s.io/ingress-nginx"}},
        _deployment("trainer", priorityClassName="training-high", runtimeClassName="gvisor"),
        _deployment("batch", priorityClassName="batch-low", runtimeClassName="runc"),
        _deployment("agent", priorityClassName="system-node-critical"),
        {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "db", "namespace": "ml"},
         "spec": {"serviceName": "db", "selector": {"matchLabels": {"app": "x"}}, "template": _pod(),
                  "volumeClaimTemplates": [claim]}},
        {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "scratch", "namespace": "ml"},
         "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "standard",
                  "resources": {"requests": {"storage": "1Gi"}}}},
        _ingress("public", {"ingressClassName": "nginx"}),
        _ingress("legacy", annotations={"kubernetes.io/ingress.class": "traefik"}),
        _ingress("internal", {"ingressClassName": "internal"}),
    ]


cluster, audited = cluster_and_audit(_objects, KINDS)


def _class_findings(document: dict) -> dict[tuple[str, str], dict]:
    """(referrer, missing class) -> the audit's backup-finding for a class-missing."""
    found = [f for f in document["findings"] if f["code"] == "backup-finding" and f["kind"] == "class-missing"]
    return {(f["backup"]["object"], f["message"].split(" names ", 1)[1].split(" at ", 1)[0]): f for f in found}


MISSING = {
    ("Deployment/ml/trainer", "PriorityClass 'training-high'"): (".spec.template.spec.priorityClassName",
                                                                 "admission rejects its pods"),
    ("Deployment/ml/trainer", "RuntimeClass 'gvisor'"): (".spec.template.spec.runtimeClassName",
                                                         "admission rejects its pods"),
    ("StatefulSet/ml/db", "StorageClass 'fast-ssd'"): (".spec.volumeClaimTemplates[0].spec.storageClassName",
                                                      "stays Pending"),
    ("Ingress/ml/public", "IngressClass 'nginx'"): (".spec.ingressClassName", "no ingress controller serves"),
    ("Ingress/ml/legacy", "IngressClass 'traefik'"): (".metadata.annotations.kubernetes.io/ingress.class",
                                                      "no ingress controller serves"),
}


def test_each_missing_class_is_a_named_finding_with_field_consequence_and_fix(audited):
    _, document = audited
    found = _class_findings(document)
    assert set(found) == set(MISSING), sorted(found)
    for key, (field, consequence) in MISSING.items():
        message, action = found[key]["message"], found[key]["action"]
        assert f" at {field}, " in message and consequence in message, message
        assert "create it in the recovery cluster" in action, action
        assert found[key]["severity"] == "warning", found[key]
    storage = found[("StatefulSet/ml/db", "StorageClass 'fast-ssd'")]["action"]
    assert "storage-class:fast-ssd" in storage, storage


def test_no_class_is_an_unknown_location_and_the_exported_ones_are_restored(audited):
    _, document = audited
    prefixes = ("storageclass:", "priorityclass:", "runtimeclass:", "ingressclass:")
    unknown = [f for f in document["findings"] if f["code"] == "unknown-location"
               and f["reference"].startswith(prefixes)]
    assert unknown == []
    named = " ".join(f["message"] for f in document["findings"])
    for exported in ("batch-low", "'runc'", "'standard'", "'internal'", "system-node-critical"):
        assert exported not in named, exported


def test_the_scan_records_the_classes_as_dependencies(audited, tmp_path):
    plan = load_plan(str(tmp_path / "plan.yaml"))
    repo = Repository(LocalStore(plan.spec.targets[0].url))
    [snapshot] = repo.snapshots()
    refs = {d["reference"] for r in read_catalog_records(repo, snapshot.catalog) for d in r.get("dependencies", [])}
    assert {"priorityclass:training-high", "priorityclass:batch-low", "runtimeclass:gvisor", "runtimeclass:runc",
            "storageclass:fast-ssd", "storageclass:standard", "ingressclass:nginx", "ingressclass:traefik",
            "ingressclass:internal"} <= refs, sorted(refs)
    assert "priorityclass:system-node-critical" not in refs


def test_the_audit_takes_the_class_kinds_from_the_exporters_declaration(audited, tmp_path):
    """The kinds come from the kubernetes exporter (contract v2 `checked_kinds`, its classes.py),
    not from a list of the audit's own: an audit told of no exporter calls them unknown."""
    plan = load_plan(str(tmp_path / "plan.yaml"))
    repo = Repository(LocalStore(plan.spec.targets[0].url))
    scenarios = scenarios_for(plan, ["cluster-a"])
    target = choose_audited_target(plan, scenarios)

    def unknown_classes(**exporters) -> set[str]:
        report = run_audit(plan, repo, target, scenarios, **exporters)
        return {f.reference for f in report.findings if f.code == "unknown-location"
                and f.reference.split(":")[0] in ("storageclass", "priorityclass", "runtimeclass", "ingressclass")}
    assert KubernetesExporter.checked_kinds == frozenset(CLASSES)
    assert unknown_classes(exporters=planning_exporters(plan, Registry())) == set()
    assert {"storageclass:fast-ssd", "priorityclass:training-high", "runtimeclass:gvisor",
            "ingressclass:nginx"} <= unknown_classes()
