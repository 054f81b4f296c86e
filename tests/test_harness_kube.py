"""The emulated Kubernetes API server (tests/harness/kube.py) behaves like a real one where we rely on it.

Everything goes through the official ``kubernetes`` client over HTTP, except where the client
hides what is checked (status codes of list paths with a trailing slash, raw bodies).
"""

from __future__ import annotations

import base64
import json
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import kubernetes
import pytest
import urllib3
import yaml
from kubernetes.client.rest import ApiException
from kubernetes.dynamic.exceptions import ResourceNotFoundError

from tests.harness import EmulatedCluster, write_kubeconfig

from tests.upstream_fixtures import FIXTURES, missing

CLUSTERQUEUE_CRD = FIXTURES / "kueue" / "crds" / "kueue.x-k8s.io_clusterqueues.yaml"
LOCALQUEUE_CRD = FIXTURES / "kueue" / "crds" / "kueue.x-k8s.io_localqueues.yaml"


def load_crd(path: Path) -> dict:
    # A missing upstream fixture is a broken checkout: fail, never skip.
    assert path.is_file(), missing(path)
    return yaml.safe_load(path.read_text())


@pytest.fixture(scope="module")
def cluster():
    with EmulatedCluster(name="shared") as c:
        yield c
        assert c.errors == [], "the emulator hit internal errors:\n" + "\n".join(c.errors)


@pytest.fixture(autouse=True)
def _no_leftover_faults(request):
    yield
    if "cluster" in request.fixturenames:
        request.getfixturevalue("cluster").clear_faults()


@pytest.fixture
def api(cluster):
    return cluster.api_client()


@pytest.fixture
def core(api):
    return kubernetes.client.CoreV1Api(api)


_ns_counter = iter(range(10_000))


@pytest.fixture
def ns(core):
    name = f"t{next(_ns_counter)}"
    core.create_namespace({"metadata": {"name": name}})
    return name


def status_of(exc: ApiException) -> dict:
    return json.loads(exc.body)


def raw(cluster, method: str, path: str, body=None, content_type="application/json"):
    """A plain HTTP request (for what the client hides); returns (status, headers, parsed body)."""
    data = None if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
    req = urllib.request.Request(cluster.url + path, data=data, method=method,
                                 headers={"Content-Type": content_type})
    try:
        with urllib.request.urlopen(req, timeout=5) as resp:
            return resp.status, dict(resp.headers), json.loads(resp.read() or b"null")
    except urllib.error.HTTPError as err:
        return err.code, dict(err.headers), json.loads(err.read() or b"null")


def wait_for(predicate, timeout=5.0, interval=0.02):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        result = predicate()
        if result:
            return result
        time.sleep(interval)
    raise AssertionError("condition not met in time")


# ---------------------------------------------------------------------------------------------
# Lifecycle, kubeconfig, several clusters
# ---------------------------------------------------------------------------------------------

def test_two_clusters_run_side_by_side_with_kubeconfigs(tmp_path):
    source = EmulatedCluster(name="source").start()
    dest = EmulatedCluster(name="dest").start()
    try:
        assert source.url != dest.url and source.url.startswith("http://127.0.0.1:")
        path = source.kubeconfig_path(tmp_path, "src")
        client = kubernetes.config.new_client_from_config(config_file=path, context="src")
        kubernetes.client.CoreV1Api(client).create_namespace({"metadata": {"name": "only-in-source"}})

        both = write_kubeconfig(tmp_path / "both.yaml", {"source": source, "dest": dest})
        for context, expected in (("source", True), ("dest", False)):
            c = kubernetes.config.new_client_from_config(config_file=both, context=context)
            names = {n.metadata.name for n in kubernetes.client.CoreV1Api(c).list_namespace().items}
            assert ("only-in-source" in names) is expected
            assert {"default", "kube-system", "kube-public"} <= names
            c.close()
        client.close()
    finally:
        source.stop()  # stopped in start order, not reverse: must not trip kmock's resolver chain
        dest.stop()
    with pytest.raises(RuntimeError):
        source.url  # noqa: B018


def test_version_and_health(cluster, api):
    info = kubernetes.client.VersionApi(api).get_code()
    assert info.git_version == "v1.31.0" and info.major == "1"
    with urllib.request.urlopen(cluster.url + "/healthz", timeout=5) as resp:
        assert resp.read() == b"ok"


# ---------------------------------------------------------------------------------------------
# Built-in resources and discovery
# ---------------------------------------------------------------------------------------------

BUILTINS = {
    "v1": ["namespaces", "configmaps", "secrets", "serviceaccounts", "services", "pods",
           "persistentvolumeclaims"],
    "apps/v1": ["deployments", "statefulsets", "daemonsets"],
    "batch/v1": ["jobs", "cronjobs"],
    "rbac.authorization.k8s.io/v1": ["roles", "rolebindings", "clusterroles", "clusterrolebindings"],
    "scheduling.k8s.io/v1": ["priorityclasses"],
    "storage.k8s.io/v1": ["storageclasses"],
    "apiextensions.k8s.io/v1": ["customresourcedefinitions"],
    "admissionregistration.k8s.io/v1": ["validatingwebhookconfigurations", "mutatingwebhookconfigurations",
                                        "validatingadmissionpolicies", "validatingadmissionpolicybindings"],
}


def test_discovery_lists_every_builtin_resource(api):
    assert kubernetes.client.CoreApi(api).get_api_versions().versions == ["v1"]
    groups = {g.name: g for g in kubernetes.client.ApisApi(api).get_api_versions().groups}
    listings = {
        "v1": kubernetes.client.CoreV1Api(api).get_api_resources(),
        "apps/v1": kubernetes.client.AppsV1Api(api).get_api_resources(),
        "batch/v1": kubernetes.client.BatchV1Api(api).get_api_resources(),
        "rbac.authorization.k8s.io/v1": kubernetes.client.RbacAuthorizationV1Api(api).get_api_resources(),
        "scheduling.k8s.io/v1": kubernetes.client.SchedulingV1Api(api).get_api_resources(),
        "storage.k8s.io/v1": kubernetes.client.StorageV1Api(api).get_api_resources(),
        "apiextensions.k8s.io/v1": kubernetes.client.ApiextensionsV1Api(api).get_api_resources(),
        "admissionregistration.k8s.io/v1": kubernetes.client.AdmissionregistrationV1Api(api).get_api_resources(),
    }
    for group_version, plurals in BUILTINS.items():
        if "/" in group_version:
            assert groups[group_version.split("/")[0]].preferred_version.group_version == group_version
        assert listings[group_version].group_version == group_version
        served = {r.name: r for r in listings[group_version].resources}
        for plural in plurals:
            assert plural in served, f"{plural} missing from {group_version}"
            assert set(served[plural].verbs) >= {"get", "list", "watch", "create", "update", "patch", "delete"}
    assert "deployments/scale" in {r.name for r in listings["apps/v1"].resources}
    assert {r.name: r.namespaced for r in listings["v1"].resources}["configmaps"] is True


@pytest.mark.parametrize("api_class, method", [
    ("CoreV1Api", "list_namespace"), ("CoreV1Api", "list_config_map_for_all_namespaces"),
    ("CoreV1Api", "list_secret_for_all_namespaces"), ("CoreV1Api", "list_service_account_for_all_namespaces"),
    ("CoreV1Api", "list_service_for_all_namespaces"), ("CoreV1Api", "list_pod_for_all_namespaces"),
    ("CoreV1Api", "list_persistent_volume_claim_for_all_namespaces"),
    ("AppsV1Api", "list_deployment_for_all_namespaces"), ("AppsV1Api", "list_stateful_set_for_all_namespaces"),
    ("AppsV1Api", "list_daemon_set_for_all_namespaces"), ("BatchV1Api", "list_job_for_all_namespaces"),
    ("BatchV1Api", "list_cron_job_for_all_namespaces"), ("RbacAuthorizationV1Api", "list_role_for_all_namespaces"),
    ("RbacAuthorizationV1Api", "list_role_binding_for_all_namespaces"),
    ("RbacAuthorizationV1Api", "list_cluster_role"), ("RbacAuthorizationV1Api", "list_cluster_role_binding"),
    ("SchedulingV1Api", "list_priority_class"), ("StorageV1Api", "list_storage_class"),
    ("ApiextensionsV1Api", "list_custom_resource_definition"),
    ("AdmissionregistrationV1Api", "list_validating_webhook_configuration"),
    ("AdmissionregistrationV1Api", "list_mutating_webhook_configuration"),
])
def test_every_builtin_list_answers_its_list_kind(api, api_class, method):
    result = getattr(getattr(kubernetes.client, api_class)(api), method)()
    assert result.kind.endswith("List") and result.api_version
    assert int(result.metadata.resource_version) > 0


def test_builtin_workloads_round_trip(api, ns):
    apps = kubernetes.client.AppsV1Api(api)
    template = {"metadata": {"labels": {"app": "x"}},
                "spec": {"containers": [{"name": "c", "image": "busybox"}]}}
    spec = {"selector": {"matchLabels": {"app": "x"}}, "template": template}
    apps.create_namespaced_deployment(ns, {"metadata": {"name": "d"}, "spec": {**spec, "replicas": 1}})
    apps.create_namespaced_stateful_set(ns, {"metadata": {"name": "s"}, "spec": {**spec, "serviceName": "s"}})
    apps.create_namespaced_daemon_set(ns, {"metadata": {"name": "ds"}, "spec": spec})
    batch = kubernetes.client.BatchV1Api(api)
    job_template = {"spec": {"template": {"spec": {**template["spec"], "restartPolicy": "Never"}}}}
    batch.create_namespaced_job(ns, {"metadata": {"name": "j"}, **job_template})
    batch.create_namespaced_cron_job(ns, {"metadata": {"name": "cj"},
                                          "spec": {"schedule": "* * * * *", "jobTemplate": job_template}})
    rbac = kubernetes.client.RbacAuthorizationV1Api(api)
    rbac.create_cluster_role({"metadata": {"name": "system:test-reader"}, "rules": []})
    rbac.create_namespaced_role_binding(ns, {"metadata": {"name": "rb"}, "roleRef": {
        "apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "system:test-reader"}})
    kubernetes.client.SchedulingV1Api(api).create_priority_class({"metadata": {"name": f"{ns}-high"}, "value": 1000})
    kubernetes.client.StorageV1Api(api).create_storage_class({"metadata": {"name": f"{ns}-fast"},
                                                              "provisioner": "example.com/x"})
    scale = apps.read_namespaced_deployment_scale("d", ns)
    assert scale.spec.replicas == 1
    apps.patch_namespaced_deployment_scale("d", ns, {"spec": {"replicas": 3}})
    assert apps.read_namespaced_deployment("d", ns).spec.replicas == 3
    core = kubernetes.client.CoreV1Api(api)
    pod = core.create_namespaced_pod(ns, {"metadata": {"name": "p"}, "spec": template["spec"]})
    assert pod.status.phase == "Pending"
    pvc = core.create_namespaced_persistent_volume_claim(ns, {"metadata": {"name": "data"}, "spec": {
        "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}})
    assert pvc.status.phase == "Pending"  # no provisioner: stays Pending


# ---------------------------------------------------------------------------------------------
# Namespaces, PUT, 201, kind/apiVersion, trailing slashes
# ---------------------------------------------------------------------------------------------

def test_namespace_paths_and_replace(core):
    _, status, _ = core.create_namespace_with_http_info({"metadata": {"name": "ns-paths"}})
    assert status == 201
    ns = core.read_namespace("ns-paths")
    assert ns.kind == "Namespace" and ns.api_version == "v1" and ns.status.phase == "Active"
    assert ns.metadata.labels["kubernetes.io/metadata.name"] == "ns-paths"
    ns.metadata.labels["team"] = "a"
    replaced = core.replace_namespace("ns-paths", ns)  # PUT
    assert replaced.metadata.labels["team"] == "a"
    assert int(replaced.metadata.resource_version) > int(ns.metadata.resource_version)
    assert "ns-paths" in {n.metadata.name for n in core.list_namespace().items}
    # as a real cluster's controllers do, every namespace gets these two
    assert core.read_namespaced_service_account("default", "ns-paths").metadata.name == "default"
    assert "ca.crt" in core.read_namespaced_config_map("kube-root-ca.crt", "ns-paths").data
    with pytest.raises(ApiException) as err:
        core.delete_namespace("kube-system")
    assert err.value.status == 403


def test_trailing_slashes_are_tolerated(cluster, ns):
    status, _, body = raw(cluster, "GET", "/api/v1/namespaces/")
    assert status == 200 and body["kind"] == "NamespaceList"
    status, _, body = raw(cluster, "GET", f"/api/v1/namespaces/{ns}/")
    assert status == 200 and body["metadata"]["name"] == ns
    status, _, body = raw(cluster, "GET", "/apis/apps/v1/")
    assert status == 200 and body["kind"] == "APIResourceList"


def test_create_answers_201_and_objects_carry_kind(cluster, api, core, ns):
    made, status, _ = core.create_namespaced_config_map_with_http_info(ns, {"metadata": {"name": "c"}})
    assert status == 201
    assert (made.kind, made.api_version) == ("ConfigMap", "v1")
    got = core.read_namespaced_config_map("c", ns)
    assert (got.kind, got.api_version) == ("ConfigMap", "v1")
    listing = core.list_namespaced_config_map(ns)
    assert (listing.kind, listing.api_version) == ("ConfigMapList", "v1")
    # Like a real API server: items of a built-in list carry no kind/apiVersion ...
    _, _, body = raw(cluster, "GET", f"/api/v1/namespaces/{ns}/configmaps")
    assert all("kind" not in item and "apiVersion" not in item for item in body["items"])
    # ... and the DynamicClient (which needs the list kind) works on them.
    dyn = cluster.dynamic_client()
    cms = dyn.resources.get(api_version="v1", kind="ConfigMap").get(namespace=ns)
    assert cms.kind == "ConfigMapList" and "c" in {i.metadata.name for i in cms.items}


# ---------------------------------------------------------------------------------------------
# Metadata, resourceVersion, generation, conflicts, not found
# ---------------------------------------------------------------------------------------------

def test_metadata_and_resource_version_change_on_every_write(cluster, api, ns):
    apps = kubernetes.client.AppsV1Api(api)
    body = {"metadata": {"name": "web", "labels": {"a": "1"}}, "spec": {
        "replicas": 1, "selector": {"matchLabels": {"app": "web"}},
        "template": {"metadata": {"labels": {"app": "web"}},
                     "spec": {"containers": [{"name": "c", "image": "nginx:1"}]}}}}
    d = apps.create_namespaced_deployment(ns, body)
    meta = d.metadata
    assert meta.uid and meta.creation_timestamp and meta.generation == 1 and meta.namespace == ns
    rv0 = int(meta.resource_version)
    assert rv0 == cluster.resource_version

    d1 = apps.patch_namespaced_deployment("web", ns, {"metadata": {"labels": {"b": "2"}}})
    assert int(d1.metadata.resource_version) > rv0 and d1.metadata.generation == 1  # metadata only
    d2 = apps.patch_namespaced_deployment("web", ns, {"spec": {"template": {"spec": {
        "containers": [{"name": "c", "image": "nginx:2"}]}}}})  # strategic merge: by name
    assert d2.metadata.generation == 2 and int(d2.metadata.resource_version) > int(d1.metadata.resource_version)
    assert [c.image for c in d2.spec.template.spec.containers] == ["nginx:2"]
    d3 = apps.replace_namespaced_deployment("web", ns, d2)  # no-op: no write, as on a real server
    assert d3.metadata.resource_version == d2.metadata.resource_version
    d4 = apps.patch_namespaced_deployment_status("web", ns, {"status": {"replicas": 1}})
    assert d4.status.replicas == 1 and d4.metadata.generation == 2
    assert int(d4.metadata.resource_version) > int(d3.metadata.resource_version)
    # status is not writable through the main resource when it is a subresource
    d5 = apps.patch_namespaced_deployment("web", ns, {"status": {"replicas": 9}})
    assert d5.status.replicas == 1
    managers = {(m.manager, m.operation) for m in d4.metadata.managed_fields}
    assert ("OpenAPI-Generator", "Update") in managers


def test_put_with_stale_resource_version_conflicts(core, ns):
    cm = core.create_namespaced_config_map(ns, {"metadata": {"name": "cm"}, "data": {"v": "1"}})
    cm.data["v"] = "2"
    fresh = core.replace_namespaced_config_map("cm", ns, cm)
    assert fresh.data == {"v": "2"}
    cm.data["v"] = "3"  # still carries the old resourceVersion
    with pytest.raises(ApiException) as err:
        core.replace_namespaced_config_map("cm", ns, cm)
    assert err.value.status == 409
    body = status_of(err.value)
    assert body["kind"] == "Status" and body["reason"] == "Conflict" and body["code"] == 409
    assert "the object has been modified" in body["message"]
    with pytest.raises(ApiException) as err:  # a patch pinned to a stale resourceVersion, too
        core.patch_namespaced_config_map("cm", ns, {"metadata": {"resourceVersion": cm.metadata.resource_version}})
    assert err.value.status == 409
    cm.metadata.resource_version = None  # unconditional update is allowed
    assert core.replace_namespaced_config_map("cm", ns, cm).data == {"v": "3"}


def test_already_exists_and_not_found_are_status_bodies(core, ns):
    core.create_namespaced_secret(ns, {"metadata": {"name": "s"}})
    with pytest.raises(ApiException) as err:
        core.create_namespaced_secret(ns, {"metadata": {"name": "s"}})
    body = status_of(err.value)
    assert (err.value.status, body["kind"], body["reason"]) == (409, "Status", "AlreadyExists")
    assert body["details"] == {"name": "s", "kind": "secrets"}

    for call in (lambda: core.read_namespaced_secret("nope", ns),
                 lambda: core.replace_namespaced_secret("nope", ns, {"metadata": {"name": "nope"}}),
                 lambda: core.patch_namespaced_secret("nope", ns, {"metadata": {"labels": {"a": "b"}}}),
                 lambda: core.delete_namespaced_secret("nope", ns)):
        with pytest.raises(ApiException) as err:
            call()
        body = status_of(err.value)
        assert (err.value.status, body["kind"], body["reason"], body["code"]) == (404, "Status", "NotFound", 404)
        assert body["message"] == 'secrets "nope" not found'

    with pytest.raises(ApiException) as err:
        core.create_namespaced_config_map("no-such-namespace", {"metadata": {"name": "x"}})
    body = status_of(err.value)
    assert err.value.status == 404 and body["message"] == 'namespaces "no-such-namespace" not found'
    with pytest.raises(ApiException) as err:  # a restore that forgets to strip resourceVersion
        core.create_namespaced_config_map(ns, {"metadata": {"name": "x", "resourceVersion": "12"}})
    assert err.value.status == 500 and "resourceVersion should not be set" in status_of(err.value)["message"]


def test_secret_string_data_is_folded_into_data(core, ns):
    s = core.create_namespaced_secret(ns, {"metadata": {"name": "creds"}, "data": {"a": "YQ=="},
                                           "stringData": {"password": "hunter2"}})
    assert s.string_data is None and s.type == "Opaque"
    assert base64.b64decode(s.data["password"]) == b"hunter2" and s.data["a"] == "YQ=="
    with pytest.raises(ApiException) as err:
        core.create_namespaced_secret(ns, {"metadata": {"name": "bad"}, "data": {"x": "not base64!"}})
    assert err.value.status == 400


def test_finalizers_hold_deletion(core, ns):
    core.create_namespaced_config_map(ns, {"metadata": {"name": "held", "finalizers": ["example.com/keep"]}})
    core.delete_namespaced_config_map("held", ns)
    held = core.read_namespaced_config_map("held", ns)
    assert held.metadata.deletion_timestamp is not None
    core.patch_namespaced_config_map("held", ns, {"metadata": {"finalizers": None}})
    with pytest.raises(ApiException) as err:
        core.read_namespaced_config_map("held", ns)
    assert err.value.status == 404


def test_namespace_deletion_cascades():
    with EmulatedCluster(name="nsdel", namespace_deletion_delay=0.3) as c:
        core = kubernetes.client.CoreV1Api(c.api_client())
        core.create_namespace({"metadata": {"name": "doomed"}})
        core.create_namespaced_config_map("doomed", {"metadata": {"name": "cm"}})
        gone = core.delete_namespace("doomed")
        # The server answers the Namespace (not a Status); the client cannot map it onto its
        # V1Status return type and hands back the plain dict, as it would against a real cluster.
        assert gone["kind"] == "Namespace" and gone["status"]["phase"] == "Terminating"
        with pytest.raises(ApiException) as err:
            core.create_namespaced_config_map("doomed", {"metadata": {"name": "late"}})
        assert err.value.status == 403
        wait_for(lambda: "doomed" not in {n.metadata.name for n in core.list_namespace().items})
        assert c.list_objects("v1", "ConfigMap", "doomed") == []


def test_patch_flavours(cluster, core, ns):
    core.create_namespaced_config_map(ns, {"metadata": {"name": "p"}, "data": {"a": "1", "b": "2"}})
    out = core.patch_namespaced_config_map("p", ns, [{"op": "replace", "path": "/data/a", "value": "9"}])
    assert out.data == {"a": "9", "b": "2"}  # JSON patch
    with pytest.raises(ApiException) as err:
        core.patch_namespaced_config_map("p", ns, [{"op": "test", "path": "/data/a", "value": "0"}])
    assert err.value.status == 422
    status, _, body = raw(cluster, "PATCH", f"/api/v1/namespaces/{ns}/configmaps/p",
                          {"data": {"b": None}}, "application/merge-patch+json")
    assert status == 200 and body["data"] == {"a": "9"}
    dyn = cluster.dynamic_client()
    cms = dyn.resources.get(api_version="v1", kind="ConfigMap")
    applied = dyn.server_side_apply(cms, body={"apiVersion": "v1", "kind": "ConfigMap",
                                               "metadata": {"name": "applied", "namespace": ns},
                                               "data": {"k": "v"}}, namespace=ns, field_manager="dr")
    assert applied.data.k == "v"
    assert any(m.manager == "dr" for m in applied.metadata.managedFields)


# ---------------------------------------------------------------------------------------------
# Pagination and selectors
# ---------------------------------------------------------------------------------------------

def test_2500_objects_page_correctly_with_limit_500():
    with EmulatedCluster(name="paging", namespace_defaults=False) as c:
        c.create_objects([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "big"}}])
        c.create_objects({"apiVersion": "v1", "kind": "ConfigMap",
                          "metadata": {"name": f"cm-{i:05d}", "namespace": "big", "labels": {"parity": str(i % 2)}},
                          "data": {"i": str(i)}} for i in range(2500))
        core = kubernetes.client.CoreV1Api(c.api_client())

        names, tokens, remaining, token = [], [], [], None
        while True:
            resp = core.list_namespaced_config_map("big", limit=500, _continue=token, _preload_content=False)
            page = json.loads(resp.data)
            assert page["kind"] == "ConfigMapList" and len(page["items"]) <= 500
            names += [item["metadata"]["name"] for item in page["items"]]
            token = page["metadata"].get("continue")
            remaining.append(page["metadata"].get("remainingItemCount"))
            if not token:
                break
            tokens.append(token)
            if len(tokens) == 2:  # a write between pages neither breaks nor duplicates the walk
                core.create_namespaced_config_map("big", {"metadata": {"name": "aaa-late"}})
        assert len(names) == 2500 and len(set(names)) == 2500 and names == sorted(names)
        assert remaining == [2000, 1500, 1000, 500, None]
        assert len(tokens) == 4 and not any("cm-" in t for t in tokens)  # opaque
        assert c.count(verb="list", resource="configmaps", param="continue") == 4
        assert c.count(verb="list", resource="configmaps", param="limit") == 5

        typed = core.list_namespaced_config_map("big", limit=3)
        assert len(typed.items) == 3 and typed.metadata._continue
        nxt = core.list_namespaced_config_map("big", limit=3, _continue=typed.metadata._continue)
        assert nxt.items[0].metadata.name == "cm-00002"

        evens = core.list_namespaced_config_map("big", label_selector="parity=0", limit=1000, _preload_content=False)
        evens = json.loads(evens.data)
        assert len(evens["items"]) == 1000 and "remainingItemCount" not in evens["metadata"]
        with pytest.raises(ApiException) as err:
            core.list_namespaced_config_map("big", limit=5, _continue="garbage")
        assert err.value.status == 400


def test_label_and_field_selectors(core, ns):
    for name, labels in (("a", {"tier": "db", "env": "prod"}), ("b", {"tier": "web", "env": "prod"}),
                         ("c", {"tier": "web"})):
        core.create_namespaced_config_map(ns, {"metadata": {"name": name, "labels": labels}})

    def names(**kw):
        return sorted(i.metadata.name for i in core.list_namespaced_config_map(ns, **kw).items
                      if i.metadata.name != "kube-root-ca.crt")
    assert names(label_selector="tier=web") == ["b", "c"]
    assert names(label_selector="tier==web,env=prod") == ["b"]
    assert names(label_selector="tier!=web") == ["a"]
    assert names(label_selector="tier in (db, web),!env") == ["c"]
    assert names(label_selector="env") == ["a", "b"]
    assert names(label_selector="tier notin (web)") == ["a"]
    assert names(field_selector="metadata.name=b") == ["b"]
    with pytest.raises(ApiException) as err:
        core.list_namespaced_config_map(ns, label_selector="tier in web")
    assert err.value.status == 400


# ---------------------------------------------------------------------------------------------
# CRDs: the real Kueue ClusterQueue and LocalQueue definitions
# ---------------------------------------------------------------------------------------------

def test_kueue_crd_is_established_and_served():
    crd = load_crd(CLUSTERQUEUE_CRD)
    with EmulatedCluster(name="kueue", crd_establish_delay=0.3) as c:
        api = c.api_client()
        ext = kubernetes.client.ApiextensionsV1Api(api)
        custom = kubernetes.client.CustomObjectsApi(api)
        dyn = c.dynamic_client()  # discovery cached before the CRD exists
        with pytest.raises(ResourceNotFoundError):
            dyn.resources.get(api_version="kueue.x-k8s.io/v1beta2", kind="ClusterQueue")

        created = ext.create_custom_resource_definition(crd)
        assert not any(cond.type == "Established" for cond in (created.status.conditions or []))
        with pytest.raises(ApiException) as err:  # not served until Established
            custom.list_cluster_custom_object("kueue.x-k8s.io", "v1beta2", "clusterqueues")
        assert err.value.status == 404

        def established():
            got = ext.read_custom_resource_definition("clusterqueues.kueue.x-k8s.io")
            conditions = {cond.type: cond.status for cond in got.status.conditions or []}
            return got if conditions.get("Established") == "True" else None
        got = wait_for(established)
        assert {cond.type: cond.status for cond in got.status.conditions}["NamesAccepted"] == "True"
        assert got.status.accepted_names.kind == "ClusterQueue" and got.status.stored_versions == ["v1beta2"]

        group = {g.name: g for g in kubernetes.client.ApisApi(api).get_api_versions().groups}["kueue.x-k8s.io"]
        assert group.preferred_version.version == "v1beta2"
        assert {v.version for v in group.versions} == {"v1beta1", "v1beta2"}
        for version in ("v1beta1", "v1beta2"):
            _, _, listing = raw(c, "GET", f"/apis/kueue.x-k8s.io/{version}")
            resources = {r["name"]: r for r in listing["resources"]}
            assert resources["clusterqueues"]["namespaced"] is False
            assert resources["clusterqueues"]["kind"] == "ClusterQueue"
            assert "clusterqueues/status" in resources

        body = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
                "metadata": {"name": "team-a"},
                "spec": {"namespaceSelector": {}, "unknownField": "pruned",
                         "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
                             {"name": "default", "resources": [{"name": "cpu", "nominalQuota": "9"}]}]}]},
                "status": {"pendingWorkloads": 5}}
        cq = custom.create_cluster_custom_object("kueue.x-k8s.io", "v1beta2", "clusterqueues", body)
        assert cq is not None and cq["kind"] == "ClusterQueue" and cq["metadata"]["uid"]
        assert "unknownField" not in cq["spec"]  # pruned by the structural schema
        assert cq["spec"]["queueingStrategy"] == "BestEffortFIFO"  # schema default
        assert "status" not in cq  # status is a subresource: dropped on create
        old = custom.get_cluster_custom_object("kueue.x-k8s.io", "v1beta1", "clusterqueues", "team-a")
        assert old["apiVersion"] == "kueue.x-k8s.io/v1beta1"
        listed = custom.list_cluster_custom_object("kueue.x-k8s.io", "v1beta2", "clusterqueues")
        assert listed["kind"] == "ClusterQueueList" and listed["items"][0]["kind"] == "ClusterQueue"
        patched = custom.patch_cluster_custom_object_status("kueue.x-k8s.io", "v1beta2", "clusterqueues",
                                                            "team-a", {"status": {"pendingWorkloads": 2}})
        assert patched["status"]["pendingWorkloads"] == 2 and patched["metadata"]["generation"] == 1
        status, _, body415 = raw(c, "PATCH", "/apis/kueue.x-k8s.io/v1beta2/clusterqueues/team-a",
                                 {"spec": {}}, "application/strategic-merge-patch+json")
        assert status == 415 and body415["reason"] == "UnsupportedMediaType"

        dyn.resources.invalidate_cache()
        queues = dyn.resources.get(api_version="kueue.x-k8s.io/v1beta2", kind="ClusterQueue")
        made = queues.create(body={"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
                                   "metadata": {"name": "team-b"}, "spec": {"namespaceSelector": {}}})
        assert made.metadata.name == "team-b" and made.spec.queueingStrategy == "BestEffortFIFO"
        assert {i.metadata.name for i in queues.get().items} == {"team-a", "team-b"}

        ext.delete_custom_resource_definition("clusterqueues.kueue.x-k8s.io")
        wait_for(lambda: not ext.list_custom_resource_definition().items)
        with pytest.raises(ApiException) as err:
            custom.list_cluster_custom_object("kueue.x-k8s.io", "v1beta2", "clusterqueues")
        assert err.value.status == 404
        assert c.errors == []


def test_namespaced_crd_is_served_namespaced(cluster, api, ns):
    ext = kubernetes.client.ApiextensionsV1Api(api)
    ext.create_custom_resource_definition(load_crd(LOCALQUEUE_CRD))
    wait_for(lambda: any(cond.type == "Established" and cond.status == "True" for cond in
                         ext.read_custom_resource_definition("localqueues.kueue.x-k8s.io").status.conditions or []))
    custom = kubernetes.client.CustomObjectsApi(api)
    lq = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue", "metadata": {"name": "q"},
          "spec": {"clusterQueue": "team-a"}}
    made = custom.create_namespaced_custom_object("kueue.x-k8s.io", "v1beta2", ns, "localqueues", lq)
    assert made["metadata"]["namespace"] == ns
    with pytest.raises(ApiException) as err:
        custom.create_namespaced_custom_object("kueue.x-k8s.io", "v1beta2", "missing-ns", "localqueues", lq)
    assert err.value.status == 404
    everywhere = custom.list_cluster_custom_object("kueue.x-k8s.io", "v1beta2", "localqueues")
    assert [i["metadata"]["name"] for i in everywhere["items"]] == ["q"]


# ---------------------------------------------------------------------------------------------
# Watch
# ---------------------------------------------------------------------------------------------

def test_watch_replays_from_a_resource_version(core, ns):
    start = core.list_namespaced_config_map(ns).metadata.resource_version
    core.create_namespaced_config_map(ns, {"metadata": {"name": "w"}, "data": {"a": "1"}})
    core.patch_namespaced_config_map("w", ns, {"data": {"a": "2"}})
    core.delete_namespaced_config_map("w", ns)
    watch, events = kubernetes.watch.Watch(), []
    for event in watch.stream(core.list_namespaced_config_map, ns, resource_version=start, timeout_seconds=5):
        events.append((event["type"], event["object"].metadata.name, event["object"].data))
        if len(events) == 3:
            watch.stop()
    assert events == [("ADDED", "w", {"a": "1"}), ("MODIFIED", "w", {"a": "2"}), ("DELETED", "w", {"a": "2"})]


def test_watch_streams_live_events_and_expires_old_versions(core, ns):
    received = []

    def consume():
        for event in kubernetes.watch.Watch().stream(core.list_namespaced_config_map, ns,
                                                     label_selector="live=yes", timeout_seconds=2):
            received.append((event["type"], event["object"].metadata.name))
            if len(received) == 2:
                break
    thread = threading.Thread(target=consume)
    thread.start()
    time.sleep(0.2)
    core.create_namespaced_config_map(ns, {"metadata": {"name": "other"}})
    core.create_namespaced_config_map(ns, {"metadata": {"name": "live", "labels": {"live": "yes"}}})
    core.patch_namespaced_config_map("live", ns, {"metadata": {"labels": {"live": "no"}}})
    thread.join(timeout=5)
    assert received == [("ADDED", "live"), ("DELETED", "live")]  # left the selector: DELETED

    with EmulatedCluster(name="tiny-log", event_log_size=5, namespace_defaults=False) as c:
        small = kubernetes.client.CoreV1Api(c.api_client())
        rv = small.list_namespaced_config_map("default").metadata.resource_version
        for i in range(10):
            small.create_namespaced_config_map("default", {"metadata": {"name": f"c{i}"}})
        with pytest.raises(ApiException) as err:
            list(kubernetes.watch.Watch().stream(small.list_namespaced_config_map, "default",
                                                 resource_version=rv, timeout_seconds=1))
        assert err.value.status == 410


# ---------------------------------------------------------------------------------------------
# Fault injection and counters
# ---------------------------------------------------------------------------------------------

def test_throttling_answers_429_with_retry_after(cluster, ns):
    path = f"/api/v1/namespaces/{ns}/configmaps"
    no_retries = cluster.configuration()
    no_retries.retries = False
    plain = kubernetes.client.CoreV1Api(kubernetes.client.ApiClient(no_retries))
    fault = cluster.throttle_next(path, times=1, retry_after=0)
    with pytest.raises(ApiException) as err:
        plain.list_namespaced_config_map(ns)
    assert err.value.status == 429 and err.value.headers["Retry-After"] == "0"
    body = status_of(err.value)
    assert (body["kind"], body["reason"], body["details"]) == ("Status", "TooManyRequests", {"retryAfterSeconds": 0})
    assert fault.remaining == 0

    # The official client's default urllib3 Retry quietly re-sends a GET answered 429 with a
    # Retry-After (3 times at most); client_go_retries=True retries up to 10 times.
    default = kubernetes.client.CoreV1Api(kubernetes.client.ApiClient(cluster.configuration()))
    cluster.throttle_next(path, times=3, retry_after=0)
    before = cluster.count(path=path)
    assert default.list_namespaced_config_map(ns).kind == "ConfigMapList"
    assert cluster.count(path=path) == before + 4 and cluster.count(path=path, status=429) == 4
    cluster.throttle_next(path, times=4, retry_after=0)
    with pytest.raises(ApiException) as err:
        default.list_namespaced_config_map(ns)
    assert err.value.status == 429
    go_like = cluster.configuration()
    go_like.client_go_retries = True
    cluster.throttle_next(path, times=6, retry_after=0)
    assert kubernetes.client.CoreV1Api(kubernetes.client.ApiClient(go_like)).list_namespaced_config_map(ns).items


def test_failures_hangs_and_filters(cluster, core, ns):
    cluster.fail_next(f"/api/v1/namespaces/{ns}/*", 500, verb="create")
    core.list_namespaced_config_map(ns)  # a list does not match the verb filter
    with pytest.raises(ApiException) as err:
        core.create_namespaced_config_map(ns, {"metadata": {"name": "x"}})
    assert err.value.status == 500 and status_of(err.value)["reason"] == "InternalError"
    core.create_namespaced_config_map(ns, {"metadata": {"name": "x"}})  # only once

    cluster.fail_next(None, 503, times=None, method="DELETE")
    for _ in range(2):
        with pytest.raises(ApiException) as err:
            core.delete_namespaced_config_map("x", ns)
        assert err.value.status == 503
    cluster.clear_faults()
    core.delete_namespaced_config_map("x", ns)

    no_retries = cluster.configuration()
    no_retries.retries = False
    impatient = kubernetes.client.CoreV1Api(kubernetes.client.ApiClient(no_retries))
    cluster.hang_next(f"/api/v1/namespaces/{ns}", 2.0)
    started = time.monotonic()
    with pytest.raises(urllib3.exceptions.ReadTimeoutError):
        impatient.read_namespace(ns, _request_timeout=0.3)
    assert time.monotonic() - started < 1.5
    assert impatient.read_namespace(ns).metadata.name == ns  # the next one is served at once
    # By default the client re-sends a GET after a read timeout: one hang costs one timeout.
    cluster.hang_next(f"/api/v1/namespaces/{ns}", 2.0)
    assert core.read_namespace(ns, _request_timeout=0.3).metadata.name == ns

    cluster.hang_next(f"/api/v1/namespaces/{ns}", 0.3)  # slow but answered
    started = time.monotonic()
    assert core.read_namespace(ns).metadata.name == ns
    assert time.monotonic() - started >= 0.3


def test_request_counters(cluster, core, ns):
    cluster.reset_requests()
    core.create_namespaced_config_map(ns, {"metadata": {"name": "n1"}})
    core.read_namespaced_config_map("n1", ns)
    core.list_namespaced_config_map(ns, limit=1)
    counts = cluster.counts()
    assert counts[("create", f"/api/v1/namespaces/{ns}/configmaps")] == 1
    assert counts[("get", f"/api/v1/namespaces/{ns}/configmaps/n1")] == 1
    assert cluster.count(verb="list", resource="configmaps", namespace=ns, param="limit") == 1
    assert cluster.count(method="GET") == 2
    last = cluster.requests[-1]
    assert (last.verb, last.resource, last.namespace, last.status, last.query) == \
        ("list", "configmaps", ns, 200, {"limit": "1"})


def test_kmock_reactions_still_override_the_emulation(cluster, core, ns):
    reaction = cluster.emulator[f"get /api/v1/namespaces/{ns}/configmaps/teapot"] << 418
    try:
        with pytest.raises(ApiException) as err:
            core.read_namespaced_config_map("teapot", ns)
        assert err.value.status == 418
    finally:
        cluster.emulator._payloads.remove(reaction)
    with pytest.raises(ApiException) as err:
        core.read_namespaced_config_map("teapot", ns)
    assert err.value.status == 404
    # kmock's own request log and filters see every request, with the parsed Kubernetes parts
    seen = list(cluster.emulator[f"get /api/v1/namespaces/{ns}/configmaps/teapot"])
    assert len(seen) == 2 and seen[-1].name == "teapot" and seen[-1].namespace == ns


# ---------------------------------------------------------------------------------------------
# Request body limit and admission policies (issue 25)
# ---------------------------------------------------------------------------------------------

LLM_CRD = FIXTURES / "kserve" / "crds" / "serving.kserve.io_llminferenceservices.yaml"
CRDS_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


def test_bodies_up_to_3_mib_are_accepted_and_larger_ones_refused_with_413(cluster):
    crd = yaml.load(LLM_CRD.read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    body = json.dumps(crd, indent=1).encode()  # a pretty-printed file, as `kubectl create --raw -f` sends it
    assert 1024 ** 2 < len(body) < 3 * 1024 ** 2, len(body)  # over aiohttp's default limit
    status, _, created = raw(cluster, "POST", CRDS_PATH, body)
    assert status == 201, created
    assert created["spec"] == crd["spec"]

    too_big = dict(crd, metadata={"name": "toobig.example.com"})
    too_big["padding"] = "x" * (3 * 1024 ** 2)
    status, _, refused = raw(cluster, "POST", CRDS_PATH, json.dumps(too_big).encode())
    assert status == 413
    assert refused["kind"] == "Status" and refused["reason"] == "RequestEntityTooLarge"
    assert refused["message"] == "Request entity too large: limit is 3145728"
    assert cluster.get_object("apiextensions.k8s.io/v1", "CustomResourceDefinition", "toobig.example.com") is None


def _policy(name: str) -> dict:
    # JobSet's own policy, abridged: managed pods must not change their JobSet labels.
    return {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
            "metadata": {"name": name},
            "spec": {"failurePolicy": "Fail",
                     "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                                                              "operations": ["UPDATE"], "resources": ["pods"]}]},
                     "validations": [{"expression": "object.metadata.labels == oldObject.metadata.labels",
                                      "message": "JobSet labels are immutable"}]}}


def test_validating_admission_policies_and_bindings_are_served(api):
    admission = kubernetes.client.AdmissionregistrationV1Api(api)
    admission.create_validating_admission_policy(_policy("jobset-labels"))
    admission.create_validating_admission_policy_binding({
        "metadata": {"name": "jobset-labels"},
        "spec": {"policyName": "jobset-labels", "validationActions": ["Deny"]}})
    policy = admission.read_validating_admission_policy("jobset-labels")
    assert policy.kind == "ValidatingAdmissionPolicy"
    assert policy.spec.validations[0].message == "JobSet labels are immutable"
    bindings = admission.list_validating_admission_policy_binding().items
    assert [(b.metadata.name, b.spec.policy_name) for b in bindings] == [("jobset-labels", "jobset-labels")]
    patched = admission.patch_validating_admission_policy_status(
        "jobset-labels", {"status": {"observedGeneration": 1}})
    assert patched.status.observed_generation == 1
    admission.delete_validating_admission_policy_binding("jobset-labels")
    assert admission.list_validating_admission_policy_binding().items == []
