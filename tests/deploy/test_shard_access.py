"""A checkpoints source whose shards run as Indexed Jobs (shards.executor: kubernetes): the backup's
service account may write Jobs and ConfigMaps in one namespace only (a Role and RoleBinding
there, never cluster-wide), and the CronJob tells the shards which image to run (DR_IMAGE)."""

from __future__ import annotations

import pytest

from dr.deploy import access
from dr.contract import ApiWrite
from tests.deploy.conftest import backups, by_kind, container, documents, two_region_plan

PLAN = two_region_plan("shards") + """\
  - name: ckpt
    type: checkpoints
    schedule: "0 * * * *"
    roots: [{url: "s3://ckpt/runs", endpoint_url: "http://10.1.2.3:9000"}]
    dr_copy: "s3://dr-ckpt/runs"
    shards: {count: 8, executor: kubernetesSHARD_CLUSTER}
"""

JOB_VERBS = ["create", "delete", "get", "list", "watch"]


def _render(tmp_path, rendered_json, shard_cluster: str = "", *args: str) -> dict:
    path = tmp_path / "shards.yaml"
    path.write_text(PLAN.replace("SHARD_CLUSTER", shard_cluster))
    return rendered_json("--plan", str(path), *args)


def test_shard_jobs_get_a_role_in_the_release_namespace_only(tmp_path, rendered_json):
    report = _render(tmp_path, rendered_json, "", "--namespace", "backups", "--image", "registry.b/dr:2")
    docs = documents(report["manifest"])
    role, = by_kind(docs, "Role")
    assert role["metadata"]["namespace"] == "backups"
    assert role["rules"] == [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["create", "delete", "patch"]},
                             {"apiGroups": ["batch"], "resources": ["jobs"], "verbs": JOB_VERBS}]
    binding, = by_kind(docs, "RoleBinding")
    assert binding["metadata"]["namespace"] == "backups"
    assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": role["metadata"]["name"]}
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "dr-backup", "namespace": "backups"}]
    # nothing cluster-wide: the source reads no API, so no ClusterRole is bound
    assert not by_kind(docs, "ClusterRoleBinding")
    cron, = backups(docs)
    env = {e["name"]: e.get("value") for e in container(cron)["env"]}
    assert env["DR_IMAGE"] == "registry.b/dr:2" == container(cron)["image"]
    assert cron["spec"]["jobTemplate"]["spec"]["template"]["spec"]["automountServiceAccountToken"] is True
    # the coordinator reaches the API server, which no namespace selects: by its ports, since
    # no --api-server-cidr was given, and a note says so; the old "bind such a Role yourself" note is gone
    egress = by_kind(docs, "NetworkPolicy")[0]["spec"]["egress"]
    assert {"ports": [{"protocol": "TCP", "port": 443}, {"protocol": "TCP", "port": 6443}]} in egress
    assert not any("default" in str(rule) for rule in egress)
    assert any("--api-server-cidr" in n for n in report["notes"])
    assert not any("bind such a Role yourself" in n for n in report["notes"])


def test_shards_in_a_named_namespace_are_granted_there(tmp_path, rendered_json):
    report = _render(tmp_path, rendered_json, ", kubernetes: {namespace: shard-jobs}")
    docs = documents(report["manifest"])
    role, = by_kind(docs, "Role")
    binding, = by_kind(docs, "RoleBinding")
    assert role["metadata"]["namespace"] == binding["metadata"]["namespace"] == "shard-jobs"
    assert binding["subjects"][0]["namespace"] == "dr-system"
    assert any("in namespace shard-jobs: create them there yourself" in n for n in report["notes"])


def test_shards_in_another_cluster_get_no_role_here(tmp_path, rendered_json):
    report = _render(tmp_path, rendered_json, ", kubernetes: {kubeconfig: /etc/shards/kubeconfig}")
    docs = documents(report["manifest"])
    assert not by_kind(docs, "Role") and not by_kind(docs, "RoleBinding")
    assert any("grant its user create, get, list, watch and delete on jobs" in n for n in report["notes"])


def test_an_unsharded_source_gets_no_write_role(tmp_path, rendered_json):
    path = tmp_path / "plain.yaml"
    path.write_text(PLAN.replace("SHARD_CLUSTER", "").replace("executor: kubernetes", "executor: local"))
    docs = documents(rendered_json("--plan", str(path))["manifest"])
    assert not by_kind(docs, "Role")
    cron, = backups(docs)
    assert {"name": "DR_IMAGE", "value": "registry.region-b.example.com/dr:1.2"} in container(cron)["env"]


@pytest.mark.parametrize("write", [ApiWrite("*", ("jobs",), ("create",)), ApiWrite("batch", ("*",), ("create",)),
                                   ApiWrite("batch", ("jobs",), ("*",))])
def test_a_wildcard_write_is_refused(write):
    with pytest.raises(access.WildcardWrite, match="must name its group, resources and verbs"):
        access.writes([write], "dr-system")


def test_writes_merge_verbs_per_resource_and_namespace():
    grants = access.writes([ApiWrite("batch", ("jobs",), ("create",), why="a"),
                            ApiWrite("batch", ("jobs",), ("delete",), "team", why="b"),
                            ApiWrite("batch", ("jobs",), ("get",), why="c")], "dr-system")
    assert [(g.namespace, g.rules) for g in grants] == [
        ("dr-system", [{"apiGroups": ["batch"], "resources": ["jobs"], "verbs": ["create", "get"]}]),
        ("team", [{"apiGroups": ["batch"], "resources": ["jobs"], "verbs": ["delete"]}])]
