"""The example plans in plans/ and the plan in deploy/'s ConfigMap load exactly as `dr` loads them.

So the examples cannot rot: a schema change that breaks them breaks this test. Beyond loading,
each example is checked for what it exists to show (targets that survive, keys kept apart).
"""

from __future__ import annotations

import glob
import os
import re

import pytest
import yaml

from dr.contract import ExporterOptions
from dr.model.artifacts import Sensitivity
from dr.model.plan_loading import load_plan
from dr.model.plans import Plan

from tests.plans.conftest import REPO_ROOT

PLANS = sorted(glob.glob(os.path.join(REPO_ROOT, "plans", "*.yaml")))
CRONJOB = os.path.join(REPO_ROOT, "deploy", "cronjob.yaml")


def _ids(paths: list[str]) -> list[str]:
    return [os.path.relpath(p, REPO_ROOT) for p in paths]


def test_the_documented_examples_exist():
    names = {os.path.basename(p) for p in PLANS}
    assert {"single-cluster.yaml", "multi-region.yaml"} <= names


@pytest.mark.parametrize("path", PLANS, ids=_ids(PLANS))
def test_example_plan_loads(path, registry):
    plan = load_plan(path, registry)
    _check_plan(plan, registry)


@pytest.mark.parametrize("path", PLANS, ids=_ids(PLANS))
def test_example_plan_holds_no_private_key_or_credential(path):
    text = open(path, encoding="utf-8").read()
    assert "AGE-SECRET-KEY" not in text.upper()
    assert not re.search(r"://[^/\s@]+:[^/\s@]+@", text), "credentials embedded in a URL"
    assert not re.search(r"(?<![A-Z0-9])(AKIA|ASIA)[A-Z0-9]{16}", text), "an AWS access key id"


def test_single_cluster_shape(registry):
    plan = load_plan(os.path.join(REPO_ROOT, "plans", "single-cluster.yaml"), registry)
    clusters = [d for d in plan.domains if d.kind == "cluster"]
    regions = [d for d in plan.domains if d.kind == "region"]
    accounts = [d for d in plan.domains if d.kind == "account"]
    assert len(clusters) == 1 and len(accounts) == 1 and len(regions) == 2
    (cluster,) = clusters
    (target,) = plan.spec.targets
    # The bucket is in the other region of the same account.
    (account,) = accounts
    cluster_region = plan.domains.domains[cluster.name].parent
    assert target.domain in {r.name for r in regions} and target.domain != cluster_region
    assert account.name in plan.domains.ancestors(target.domain)
    assert account.name in plan.domains.ancestors(cluster.name)
    assert {s.type for s in plan.spec.sources} == {"git", "files"}


def test_multi_region_shape(registry):
    plan = load_plan(os.path.join(REPO_ROOT, "plans", "multi-region.yaml"), registry)
    spec = plan.spec
    kinds = {d.kind for d in plan.domains}
    assert {"provider", "account", "region", "zone", "cluster"} <= kinds
    protected_kinds = {plan.domains.domains[d].kind for d in spec.protects_against}
    assert {"cluster", "region"} <= protected_kinds
    # Placement rules for in-cluster DNS and every cluster's ingress domain.
    matches = [r.match for r in spec.placement_rules]
    assert "*.svc.cluster.local" in matches
    clusters = [d.name for d in plan.domains if d.kind == "cluster"]
    for cluster in clusters:
        assert any(r.domain == cluster and cluster in r.match for r in spec.placement_rules), cluster
    # Locations for every kind of endpoint the brief lists.
    assert {"kubernetes-api", "registry", "secret-store", "model-registry", "dns", "bucket"} <= {
        loc.kind for loc in spec.locations}
    # A near target and a remote, object-locked one; the default target is the remote one.
    assert len(spec.targets) == 2
    near, remote = spec.targets
    assert near.immutability is None and remote.immutability.mode == "compliance"
    assert plan.primary_target().name == remote.name
    assert plan.domains.is_lost(near.domain, spec.protects_against)
    assert all(t.credentials_location for t in spec.targets)
    assert len(spec.encryption.recipients) == 2
    assert spec.dr_image and spec.encryption.key_location
    assert all(s.rpo and s.rto for s in spec.sources)
    assert not spec.retention.is_empty()


def _check_plan(plan: Plan, registry) -> None:
    spec = plan.spec
    # Each source's options were validated by its exporter's own model.
    for source in spec.sources:
        assert isinstance(plan.options[source.name], registry.get(source.type).Options)
        assert isinstance(plan.options[source.name], ExporterOptions)
    # The point of the plan: the default target survives every protected domain ...
    primary = plan.primary_target()
    assert not plan.domains.is_lost(primary.domain, spec.protects_against)
    # ... and so do the things a restore needs from outside the repository.
    for reference in (spec.encryption.key_location, spec.dr_image):
        if reference:
            placement = plan.placer.place(reference)
            assert placement.domain is not None, f"{reference!r} is placed nowhere"
            assert not plan.domains.is_lost(placement.domain, spec.protects_against), reference
    credentials = plan.target(primary.name).credentials_location
    if credentials:
        placement = plan.placer.place(credentials)
        assert placement.domain and not plan.domains.is_lost(placement.domain, spec.protects_against)
    if any(s.sensitivity == Sensitivity.SECRET for s in spec.sources):
        assert spec.encryption.recipients and spec.encryption.key_location
    for source in spec.sources:
        if source.schedule:
            assert source.rpo, f"{source.name}: a schedule without an rpo says nothing about loss"


# -- deploy/cronjob.yaml (rendered from plans/multi-region.yaml: tests/deploy) ---------------------
def _manifests() -> list[dict]:
    with open(CRONJOB, encoding="utf-8") as handle:
        return [d for d in yaml.safe_load_all(handle) if d]


def _one(kind: str) -> dict:
    (found,) = [d for d in _manifests() if d["kind"] == kind]
    return found


def test_deploy_configmap_plan_loads(tmp_path, registry):
    """The plan in the ConfigMap, extracted as Kubernetes mounts it, is a valid plan."""
    configmap = _one("ConfigMap")
    plan_path = tmp_path / "plan.yaml"
    plan_path.write_text(configmap["data"]["plan.yaml"], encoding="utf-8")
    plan = load_plan(str(plan_path), registry)
    _check_plan(plan, registry)
    assert "AGE-SECRET-KEY" not in configmap["data"]["plan.yaml"].upper()
    # Relative target paths would resolve inside the read-only ConfigMap mount.
    assert all(t.url.startswith("s3://") for t in plan.spec.targets)


def test_deploy_cronjob_runs_the_mounted_plan():
    objects = _manifests()
    assert {"ServiceAccount", "ConfigMap", "CronJob", "NetworkPolicy"} <= {o["kind"] for o in objects}
    cronjobs = [o for o in objects if o["kind"] == "CronJob"]
    assert len(cronjobs) > 1
    for cronjob in cronjobs:
        _check_cronjob(cronjob["spec"], _one("ConfigMap"), _one("ServiceAccount"))


def _check_cronjob(cron: dict, configmap: dict, account: dict) -> None:
    assert cron["concurrencyPolicy"] == "Forbid"
    pod = cron["jobTemplate"]["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    # a backup per schedule, then prune, verify, status and audit per target: each runs the mounted plan
    assert container["command"][0] == "dr" and container["command"][1] in ("backup", "prune", "verify", "status", "audit")
    assert container["command"][2:4] == ["--plan", "/etc/dr/plan.yaml"] and "--quiet" in container["command"]
    mounts = {m["mountPath"]: m for m in container["volumeMounts"]}
    volumes = {v["name"]: v for v in pod["volumes"]}
    plan_volume = volumes[mounts["/etc/dr"]["name"]]
    assert plan_volume["configMap"]["name"] == configmap["metadata"]["name"]
    assert mounts["/etc/dr"]["readOnly"] is True
    assert "emptyDir" in volumes[mounts["/tmp"]["name"]]
    assert pod["serviceAccountName"] == account["metadata"]["name"]
    # Non-root, read-only root filesystem, nothing to escalate with.
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["runAsUser"] != 0
    security = container["securityContext"]
    assert security["readOnlyRootFilesystem"] is True
    assert security["allowPrivilegeEscalation"] is False
    assert security["capabilities"]["drop"] == ["ALL"]
    assert {"requests", "limits"} <= set(container["resources"])
    assert {"cpu", "memory"} <= set(container["resources"]["requests"])
    assert {"cpu", "memory"} <= set(container["resources"]["limits"])
    # Credentials come from a Secret, by reference, never as literal values.
    secret_env = [e for e in container["env"] if "valueFrom" in e]
    assert secret_env and all("secretKeyRef" in e["valueFrom"] for e in secret_env)
    credential_names = re.compile(r"(?i)secret|token|password|access_key|key_id")
    for entry in container["env"]:
        if "value" in entry:
            assert not credential_names.search(entry["name"]), entry
            assert not re.search(r"AKIA|ASIA|AGE-SECRET-KEY|://[^/\s@]+@", entry["value"]), entry
    assert {e["name"] for e in secret_env} >= {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"}


@pytest.mark.parametrize("kind", ["ServiceAccount", "ConfigMap", "CronJob", "NetworkPolicy"])
def test_deploy_manifest_fields_exist_in_the_kubernetes_api(kind):
    """Every field name is one the Kubernetes API knows (a typo would be dropped silently)."""
    model = {"ServiceAccount": "V1ServiceAccount", "ConfigMap": "V1ConfigMap", "CronJob": "V1CronJob",
             "NetworkPolicy": "V1NetworkPolicy"}[kind]
    for obj in (o for o in _manifests() if o["kind"] == kind):
        assert _unknown_fields(obj, model, kind) == []


def _unknown_fields(value, type_name: str, where: str) -> list[str]:
    import kubernetes.client as k8s

    if type_name.startswith("List[") and isinstance(value, list):
        inner = type_name[5:-1]
        return [u for i, item in enumerate(value) for u in _unknown_fields(item, inner, f"{where}[{i}]")]
    if type_name.startswith("Dict[") and isinstance(value, dict):
        inner = type_name[5:-1].split(", ", 1)[1]
        return [u for k, v in value.items() for u in _unknown_fields(v, inner, f"{where}.{k}")]
    model = getattr(k8s, type_name, None)
    if model is None or not hasattr(model, "attribute_map"):
        return []  # a scalar (str, int, bool, object ...)
    if not isinstance(value, dict):
        return [f"{where}: expected an object ({type_name})"]
    by_json = {json_name: attr for attr, json_name in model.attribute_map.items()}
    unknown = []
    for key, item in value.items():
        if key not in by_json:
            unknown.append(f"{where}.{key}")
            continue
        unknown += _unknown_fields(item, model.openapi_types[by_json[key]], f"{where}.{key}")
    return unknown


def test_unknown_fields_helper_catches_a_typo():
    cron = next(o for o in _manifests() if o["kind"] == "CronJob")
    cron["spec"]["concurencyPolicy"] = "Forbid"
    cron["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]["securtyContext"] = {}
    assert _unknown_fields(cron, "V1CronJob", "CronJob") == [
        "CronJob.spec.jobTemplate.spec.template.spec.containers[0].securtyContext",
        "CronJob.spec.concurencyPolicy",
    ]
