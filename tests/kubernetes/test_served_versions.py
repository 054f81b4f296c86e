"""Every served kind is backed up, also one served only in a version its group does not prefer (issue 25).

Upstream KServe and External Secrets CRDs, unmodified: `serving.kserve.io` prefers v1beta1, which
serves only InferenceService; ClusterServingRuntime, ServingRuntime, InferenceGraph and
TrainedModel are v1alpha1, the LLM kinds v1alpha1 and v1alpha2. `external-secrets.io` prefers v1;
PushSecret is v1alpha1. The emulator reports discovery as a real API server does: every served
version of a group, and the preferred one.
"""

from __future__ import annotations

import pytest

from dr.exporters.kubernetes.connecting import api_client, dynamic_client
from dr.exporters.kubernetes.discovering import served_types, version_priority
from dr.exporters.kubernetes.requesting import Api
from tests.harness import write_kubeconfig
from tests.kubernetes.conftest import Pipeline
from tests.kubernetes.upstream import cluster_with, upstream
from tests.upstream_fixtures import FIXTURES

GROUPS = ["kserve/crds", "external-secrets/crds"]


def _crds() -> list[dict]:
    files = [f for folder in GROUPS for f in sorted((FIXTURES / folder).glob("*.yaml"))]
    assert len(files) == 12, f"expected the 7 KServe and 5 External Secrets CRDs under {FIXTURES}"
    return [doc for f in files for doc in upstream(str(f.relative_to(FIXTURES)))]


def _objects() -> list[dict]:
    def obj(api_version, kind, name, namespace="ml", spec=None):
        meta = {"name": name, **({"namespace": namespace} if namespace else {})}
        return {"apiVersion": api_version, "kind": kind, "metadata": meta, "spec": spec or {}}

    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ml"}},
        obj("serving.kserve.io/v1alpha1", "ClusterServingRuntime", "vllm", None,
            {"containers": [{"name": "kserve-container", "image": "vllm/vllm-openai:v0.6.0"}]}),
        obj("serving.kserve.io/v1alpha1", "ServingRuntime", "triton",
            spec={"containers": [{"name": "kserve-container", "image": "nvcr.io/triton:24.01"}]}),
        obj("serving.kserve.io/v1alpha1", "InferenceGraph", "router",
            spec={"nodes": {"root": {"routerType": "Sequence", "steps": [{"serviceName": "llm"}]}}}),
        obj("serving.kserve.io/v1beta1", "InferenceService", "llm",
            spec={"predictor": {"model": {"modelFormat": {"name": "huggingface"}, "runtime": "vllm"}}}),
        obj("serving.kserve.io/v1alpha2", "LLMInferenceService", "chat", spec={"model": {"uri": "hf://m/x"}}),
        obj("external-secrets.io/v1alpha1", "PushSecret", "push-db",
            spec={"secretStoreRefs": [{"name": "vault", "kind": "SecretStore"}],
                  "selector": {"secret": {"name": "db"}}}),
        obj("external-secrets.io/v1", "ExternalSecret", "db",
            spec={"secretStoreRef": {"name": "vault", "kind": "SecretStore"}}),
    ]


@pytest.fixture(scope="module")
def serving_cluster():
    with cluster_with(_crds(), _objects()) as cluster:
        yield cluster


def test_discovery_lists_every_served_kind_once_at_its_best_version(serving_cluster, tmp_path):
    kubeconfig = write_kubeconfig(str(tmp_path / "kubeconfig"), {"source": serving_cluster}, current="source")
    api = Api(dynamic_client(api_client(kubeconfig, "source", pool_size=2), str(tmp_path / "discovery-cache")))
    served = {(t.group, t.plural): t.version for t in served_types(api)}
    assert served[("serving.kserve.io", "inferenceservices")] == "v1beta1"  # the preferred version
    for plural in ("clusterservingruntimes", "servingruntimes", "inferencegraphs", "trainedmodels"):
        assert served[("serving.kserve.io", plural)] == "v1alpha1", plural
    assert served[("serving.kserve.io", "llminferenceservices")] == "v1alpha2"  # the better of two
    assert served[("external-secrets.io", "pushsecrets")] == "v1alpha1"
    assert served[("external-secrets.io", "externalsecrets")] == "v1"


def test_a_kind_served_only_in_a_non_preferred_version_is_backed_up(serving_cluster, tmp_path):
    kubeconfig = write_kubeconfig(str(tmp_path / "kubeconfig"), {"source": serving_cluster}, current="source")
    backup = Pipeline(tmp_path, kubeconfig).backup(workload_kinds=["InferenceService"])
    names = " ".join(sorted(backup.identities()))
    for kind in ("clusterservingruntimes", "servingruntimes", "inferencegraphs", "llminferenceservices",
                 "pushsecrets", "externalsecrets", "inferenceservices"):
        assert kind in names, (kind, names)


def test_version_priority_is_kubernetes_order():
    versions = ["v1alpha1", "v2", "v1beta2", "v1", "v1beta1", "v1alpha2", "v10"]
    assert sorted(versions, key=version_priority, reverse=True) == \
        ["v10", "v2", "v1", "v1beta2", "v1beta1", "v1alpha2", "v1alpha1"]
