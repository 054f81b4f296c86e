"""The biggest upstream CRDs, an object over 1 MiB and admission policies, backed up and restored (issue 25).

The six upstream CRD files of 1 to 3 MiB (KServe's LLMInferenceService, LLMInferenceServiceConfig
and InferenceService, Kueue's Workload, LWS's LeaderWorkerSet and DisaggregatedSet), unmodified,
are created over HTTP. A LeaderWorkerSet of about 1.2 MiB (a pod template with a large
environment; under etcd's default 1.5 MiB value limit) makes the restore send a body larger than
the 1 MiB the emulator used to accept. A ValidatingAdmissionPolicy and its binding, as JobSet ships
them, come back with the binding created after its policy.
"""

from __future__ import annotations

import os

import kubernetes
import pytest

from tests.harness import EmulatedCluster, write_kubeconfig
from tests.kubernetes.conftest import Pipeline, failures
from tests.kubernetes.test_restore_order import assert_before
from tests.kubernetes.upstream import upstream, wait_established
from tests.upstream_fixtures import FIXTURES

MiB = 1024 ** 2
AR = "admissionregistration.k8s.io/v1"
POLICY_KINDS = ["ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"]


def _big_crds() -> list[dict]:
    files = sorted(f for f in FIXTURES.glob("*/crds/*.yaml") if MiB < f.stat().st_size < 3 * MiB)
    assert len(files) == 6, f"expected the six upstream CRD files of 1 to 3 MiB under {FIXTURES}: {files}"
    return [doc for f in files for doc in upstream(str(f.relative_to(FIXTURES)))]


def _big_leaderworkerset() -> dict:
    env = [{"name": f"SHARD_{i:05d}_ENDPOINT", "value": f"grpc://shard-{i:05d}.model.svc:9000/" + "w" * 64}
           for i in range(11_000)]
    pod = {"spec": {"containers": [{"name": "worker", "image": "vllm/vllm-openai:v0.6.0", "env": env}]}}
    return {"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet",
            "metadata": {"name": "llama-405b", "namespace": "serving"},
            "spec": {"replicas": 1, "leaderWorkerTemplate": {"size": 2, "workerTemplate": pod}}}


def _policies() -> list[dict]:
    # JobSet's policy, abridged, and its binding (sigs.k8s.io/jobset config/components/admission).
    return [
        {"apiVersion": AR, "kind": "ValidatingAdmissionPolicy", "metadata": {"name": "jobset-pod-labels"},
         "spec": {"failurePolicy": "Fail",
                  "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                                                           "operations": ["UPDATE"], "resources": ["pods"]}]},
                  "validations": [{"expression": "object.metadata.labels == oldObject.metadata.labels",
                                   "message": "the JobSet labels of a pod are immutable"}]}},
        {"apiVersion": AR, "kind": "ValidatingAdmissionPolicyBinding", "metadata": {"name": "jobset-pod-labels"},
         "spec": {"policyName": "jobset-pod-labels", "validationActions": ["Deny"]}},
    ]


def _create_over_http(cluster: EmulatedCluster, objects: list[dict]) -> None:
    client = kubernetes.dynamic.DynamicClient(cluster.api_client())
    for obj in objects:
        resource = client.resources.get(api_version=obj["apiVersion"], kind=obj["kind"])
        resource.create(body=obj, namespace=obj["metadata"].get("namespace"))


@pytest.fixture(scope="module")
def big_source():
    cluster = EmulatedCluster(name="source").start()
    try:
        crds = _big_crds()
        _create_over_http(cluster, crds)
        wait_established(cluster, crds)
        _create_over_http(cluster, [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "serving"}},
                                    _big_leaderworkerset(), *_policies()])
        yield cluster, crds
    finally:
        cluster.stop()


def test_big_crds_a_big_object_and_policies_round_trip(big_source, tmp_path):
    source, crds = big_source
    with EmulatedCluster(name="dest") as dest:
        kubeconfig = write_kubeconfig(os.path.join(tmp_path, "kubeconfig"), {"source": source, "dest": dest},
                                      current="source")
        pipeline = Pipeline(tmp_path, kubeconfig)
        backup = pipeline.backup(workload_kinds=POLICY_KINDS)
        outcomes = pipeline.restore(backup.artifacts)
        assert failures(outcomes) == []
        for crd in crds:
            live = dest.get_object("apiextensions.k8s.io/v1", "CustomResourceDefinition", crd["metadata"]["name"])
            assert live is not None and live["spec"]["versions"] == crd["spec"]["versions"], crd["metadata"]["name"]
        restored = dest.get_object("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet", "llama-405b", "serving")
        assert restored["spec"]["leaderWorkerTemplate"]["workerTemplate"] == \
            _big_leaderworkerset()["spec"]["leaderWorkerTemplate"]["workerTemplate"]
        biggest = max(r.size for r in dest.requests if r.verb == "create")
        assert biggest > MiB, biggest  # the restore really sent a body over the old 1 MiB limit
        for policy in _policies():
            live = dest.get_object(AR, policy["kind"], policy["metadata"]["name"])
            assert live is not None and live["spec"] == {**live["spec"], **policy["spec"]}, policy["kind"]
        assert_before(dest, "validatingadmissionpolicies", "validatingadmissionpolicybindings")
        assert_before(dest, "leaderworkersets", "validatingadmissionpolicybindings")
        assert dest.errors == []
