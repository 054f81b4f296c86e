"""deploy/cronjob.yaml is the rendering of plans/multi-region.yaml, and the emulated API server
accepts every rendered object and gives it back as written."""

from __future__ import annotations

import os

import kubernetes
import pytest

from tests.deploy.conftest import MULTI_REGION, documents, render
from tests.deploy.test_shard_access import PLAN as SHARDS_PLAN
from tests.harness import EmulatedCluster
from tests.plans.conftest import REPO_ROOT

EXAMPLE = os.path.join(REPO_ROOT, "deploy", "cronjob.yaml")
PUSHGATEWAY = "http://prometheus-pushgateway.monitoring.svc:9091"  # the example's metrics go there


def test_deploy_cronjob_yaml_is_the_rendered_example_plan(tmp_path, capsys):
    fresh = tmp_path / "cronjob.yaml"
    code, _, err = render(["--plan", MULTI_REGION, "--pushgateway", PUSHGATEWAY, "--out", str(fresh)], capsys)
    assert code == 0, err
    assert open(EXAMPLE, "rb").read() == fresh.read_bytes(), (
        "deploy/cronjob.yaml is out of date: dr deploy render --plan plans/multi-region.yaml "
        f"--pushgateway {PUSHGATEWAY} --out deploy/cronjob.yaml")


@pytest.fixture(scope="module")
def cluster():
    with EmulatedCluster(name="deploy") as c:
        yield c
        assert c.errors == [], "the emulator hit internal errors:\n" + "\n".join(c.errors)


def _apply(cluster, docs: list[dict], namespace: str) -> list[tuple[dict, dict]]:
    """Create every object through the dynamic client (as kubectl apply would); (sent, read back)."""
    client = kubernetes.dynamic.DynamicClient(cluster.api_client())
    core = kubernetes.client.CoreV1Api(cluster.api_client())
    for ns in sorted({namespace} | {d["metadata"]["namespace"] for d in docs if "namespace" in d["metadata"]}):
        core.create_namespace({"metadata": {"name": ns}})
    pairs = []
    for doc in docs:
        api = client.resources.get(api_version=doc["apiVersion"], kind=doc["kind"])
        where = doc["metadata"].get("namespace")
        api.create(body=doc, namespace=where)
        pairs.append((doc, api.get(name=doc["metadata"]["name"], namespace=where).to_dict()))
    return pairs


@pytest.mark.parametrize("plan", ["multi-region", "wide", "shards"])
def test_the_emulated_api_server_accepts_the_objects(cluster, plan, wide_plan, tmp_path, capsys):
    namespace = f"dr-{plan}"
    path = {"multi-region": MULTI_REGION, "wide": wide_plan, "shards": tmp_path / "shards.yaml"}[plan]
    (tmp_path / "shards.yaml").write_text(SHARDS_PLAN.replace("SHARD_CLUSTER", ""), encoding="utf-8")
    path = str(path)
    code, out, err = render(["--plan", path, "--namespace", namespace], capsys)
    assert code == 0, err
    docs = documents(out)
    if plan == "wide":  # the plan whose sources read the API: its RBAC objects are applied too
        assert {"ClusterRole", "ClusterRoleBinding", "RoleBinding"} <= {d["kind"] for d in docs}
    if plan == "shards":  # the sharded checkpoints' write grant: a Role, bound in the release namespace
        assert {("Role", namespace), ("RoleBinding", namespace)} <= {(d["kind"], d["metadata"].get("namespace"))
                                                                      for d in docs}
    pairs = _apply(cluster, docs, namespace)
    assert len(pairs) == len(docs)
    for sent, stored in pairs:
        assert stored["metadata"]["name"] == sent["metadata"]["name"]
        for key in ("spec", "data", "rules", "roleRef", "subjects", "automountServiceAccountToken"):
            if key in sent:
                assert stored[key] == sent[key], (sent["kind"], key)
