"""Restore order by references between objects, and admission webhook refusals tried again (issue 25).

The upstream Kubeflow Trainer, External Secrets and KServe CRDs, unmodified (read from the shared
fixtures, tests/kubernetes/upstream.py). A TrainJob has no pod template (configuration), the
runtime it names has one (a workload): before references counted, the TrainJob came a level
before its runtime, and Trainer's validating webhook refuses a TrainJob whose runtime is missing.
The emulator runs no webhooks: `trainer_webhook` below STANDS IN for Trainer's validating webhook
(harness add_admission_webhook: a check run on every create, refused in kube-apiserver's words).
"""

from __future__ import annotations

import json

import kubernetes
import pytest

from dr.contract import OutcomeStatus
from dr.exporters.kubernetes.admission import RETRIES
from tests.harness import EmulatedCluster, write_kubeconfig
from tests.kubernetes.conftest import Pipeline, failures
from tests.kubernetes.test_restore_order import assert_before
from tests.kubernetes.upstream import upstream, wait_established
from tests.upstream_fixtures import FIXTURES

TR = "trainer.kubeflow.org/v1alpha1"
TRAINER_WEBHOOK = "validate-trainer-kubeflow-org-v1alpha1-trainjob.kb.io"


def _crds(*folders: str) -> list[dict]:
    files = [f for folder in folders for f in sorted((FIXTURES / folder).glob("*.yaml"))]
    assert files, f"no upstream CRDs under {FIXTURES} for {folders}"
    return [doc for f in files for doc in upstream(str(f.relative_to(FIXTURES)))]


def _obj(api_version: str, kind: str, name: str, namespace: str | None = "ml", spec: dict | None = None) -> dict:
    meta = {"name": name, **({"namespace": namespace} if namespace else {})}
    return {"apiVersion": api_version, "kind": kind, "metadata": meta, "spec": spec or {}}


def _runtime_spec(image: str) -> dict:
    pod = {"spec": {"containers": [{"name": "node", "image": image, "command": ["torchrun", "train.py"]}]}}
    return {"mlPolicy": {"numNodes": 1},
            "template": {"spec": {"replicatedJobs": [{"name": "node", "template": {"spec": {"template": pod}}}]}}}


def trainer_objects() -> list[dict]:
    def job(name: str, runtime: str, kind: str) -> dict:
        return _obj(TR, "TrainJob", name, spec={"runtimeRef": {"name": runtime, "kind": kind,
                                                               "apiGroup": "trainer.kubeflow.org"}})
    return [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ml"}},
            _obj(TR, "ClusterTrainingRuntime", "torch-distributed", None, _runtime_spec("pytorch/pytorch:2.7.1")),
            _obj(TR, "TrainingRuntime", "team-torch", spec=_runtime_spec("ghcr.io/team/torch:1.0")),
            job("pretrain", "torch-distributed", "ClusterTrainingRuntime"),
            job("finetune", "torch-distributed", "ClusterTrainingRuntime"),
            job("team-run", "team-torch", "TrainingRuntime")]


def trainer_webhook(em, rtype, obj) -> str | None:
    """Stands in for Trainer's validating webhook: a TrainJob's runtime must exist."""
    if rtype.kind != "TrainJob":
        return None
    ref = obj["spec"]["runtimeRef"]
    kind = ref.get("kind") or "ClusterTrainingRuntime"
    plural = "clustertrainingruntimes" if kind == "ClusterTrainingRuntime" else "trainingruntimes"
    namespace = None if kind == "ClusterTrainingRuntime" else obj["metadata"]["namespace"]
    if em.get_object(em.types[("trainer.kubeflow.org", plural)], namespace, ref["name"]) is None:
        return f'spec.runtimeRef: Not found: "{ref["name"]}": {kind} not found'
    return None


def _source(objects: list[dict], *folders: str) -> EmulatedCluster:
    cluster = EmulatedCluster(name="source").start()
    crds = _crds(*folders)
    cluster.create_objects(crds)
    wait_established(cluster, crds)
    cluster.create_objects(objects)
    return cluster


@pytest.fixture(scope="module")
def trainer_source():
    cluster = _source(trainer_objects(), "trainer/crds")
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def recovery():
    """The recovery cluster, with the stand-in for Trainer's webhook."""
    with EmulatedCluster(name="recovery") as cluster:
        cluster.add_admission_webhook(TRAINER_WEBHOOK, trainer_webhook, code=422)
        yield cluster


def _pipeline(tmp_path, source, dest) -> Pipeline:
    kubeconfig = write_kubeconfig(str(tmp_path / "kubeconfig"), {"source": source, "dest": dest}, current="source")
    return Pipeline(tmp_path, kubeconfig)


def test_trainjobs_are_restored_after_their_runtimes_past_the_webhook(tmp_path, trainer_source, recovery):
    pipeline = _pipeline(tmp_path, trainer_source, recovery)
    backup = pipeline.backup()
    workload = {a.meta["resource"]: a.meta["workload"] for a in backup.artifacts if a.kind == "kubernetes-objects"}
    assert workload["clustertrainingruntimes"] and not workload["trainjobs"]  # what used to order them wrongly
    outcomes = pipeline.restore(backup.artifacts)
    assert failures(outcomes) == []
    restored = {o.item for o in outcomes if o.status == OutcomeStatus.RESTORED}
    assert {f"trainjobs.trainer.kubeflow.org/ml/{n}" for n in ("pretrain", "finetune", "team-run")} <= restored
    assert recovery.count(verb="create", status=422) == 0  # ordered right: the webhook never had to refuse
    assert_before(recovery, "clustertrainingruntimes", "trainjobs")
    assert_before(recovery, "trainingruntimes", "trainjobs")


def test_a_refused_create_is_tried_again_after_its_level_and_then_succeeds(tmp_path, trainer_source, recovery):
    refusals = {"ml/finetune": 2}

    def lagging_cache(em, rtype, obj):  # a webhook whose cache has not caught up: refuses twice
        key = f"{obj['metadata'].get('namespace')}/{obj['metadata']['name']}"
        if rtype.kind == "TrainJob" and refusals.get(key, 0) > 0:
            refusals[key] -= 1
            return "the runtime cache is not synced yet"
        return None

    recovery.add_admission_webhook("lagging.trainer.kubeflow.org", lagging_cache)
    pipeline = _pipeline(tmp_path, trainer_source, recovery)
    outcomes = {o.item: o for o in pipeline.restore(pipeline.backup().artifacts)}
    finetune = outcomes["trainjobs.trainer.kubeflow.org/ml/finetune"]
    assert finetune.status == OutcomeStatus.RESTORED, finetune.reason
    assert "refused it 2 times first" in finetune.reason
    assert recovery.count(verb="create", resource="trainjobs", status=403) == 2
    assert recovery.get_object(TR, "TrainJob", "finetune", "ml") is not None


def test_a_create_refused_every_time_fails_with_its_last_refusal(tmp_path, trainer_source, recovery):
    recovery.add_admission_webhook("policy.example.com", lambda em, rtype, obj: (
        "TrainJob team-run is over the team quota" if obj["metadata"]["name"] == "team-run" else None))
    pipeline = _pipeline(tmp_path, trainer_source, recovery)
    outcomes = {o.item: o for o in pipeline.restore(pipeline.backup().artifacts)}
    refused = outcomes["trainjobs.trainer.kubeflow.org/ml/team-run"]
    assert refused.status == OutcomeStatus.FAILED
    assert f"refused by an admission webhook {RETRIES + 1} times" in refused.reason
    assert 'admission webhook "policy.example.com" denied the request: TrainJob team-run is over' in refused.reason
    assert recovery.count(verb="create", resource="trainjobs", status=403) == RETRIES + 1  # bounded
    others = [o for item, o in outcomes.items() if item != "trainjobs.trainer.kubeflow.org/ml/team-run"]
    assert failures(others) == []


def serving_objects() -> list[dict]:
    es, ks = "external-secrets.io/v1", "serving.kserve.io"
    store = {"provider": {"vault": {"server": "https://vault.example.com", "path": "secret", "version": "v2",
                                    "auth": {"tokenSecretRef": {"name": "vault-token", "key": "token"}}}}}
    container = [{"name": "kserve-container", "image": "vllm/vllm-openai:v0.6.0"}]
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ml"}},
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "predictor", "namespace": "ml"}},
        _obj(es, "SecretStore", "vault", spec=store),
        _obj(es, "ClusterSecretStore", "shared-vault", None, store),
        _obj(es, "ExternalSecret", "db", spec={"secretStoreRef": {"name": "vault", "kind": "SecretStore"},
                                               "target": {"name": "db"}}),
        _obj(es, "ExternalSecret", "hf-token", spec={"secretStoreRef": {"name": "shared-vault",
                                                                        "kind": "ClusterSecretStore"}}),
        _obj(f"{ks}/v1alpha1", "ClusterServingRuntime", "vllm", None,
             {"supportedModelFormats": [{"name": "huggingface"}], "containers": container}),
        _obj(f"{ks}/v1alpha1", "ServingRuntime", "triton", spec={"containers": container}),
        _obj(f"{ks}/v1beta1", "InferenceService", "llm", spec={"predictor": {
            "serviceAccountName": "predictor", "model": {"modelFormat": {"name": "huggingface"}, "runtime": "vllm"}}}),
    ]


def test_stores_runtimes_and_service_accounts_come_before_what_names_them(tmp_path):
    source = _source(serving_objects(), "external-secrets/crds", "kserve/crds")
    try:
        with EmulatedCluster(name="recovery") as recovery:
            pipeline = _pipeline(tmp_path, source, recovery)
            outcomes = pipeline.restore(pipeline.backup(workload_kinds=["InferenceService"]).artifacts)
            assert failures(outcomes) == []
            for first in ("secretstores", "clustersecretstores"):
                assert_before(recovery, first, "externalsecrets")
            for first in ("serviceaccounts", "servingruntimes", "clusterservingruntimes"):
                assert_before(recovery, first, "inferenceservices")
    finally:
        source.stop()


def test_the_stand_in_webhook_refuses_in_kube_apiservers_words():
    with EmulatedCluster(name="admission") as cluster:
        cluster.add_admission_webhook("names.example.com", lambda em, rtype, obj: (
            "no names starting with x" if obj["metadata"]["name"].startswith("x") else None), code=400)
        core = kubernetes.client.CoreV1Api(cluster.api_client())
        core.create_namespaced_config_map("default", {"metadata": {"name": "ok"}})
        with pytest.raises(kubernetes.client.ApiException) as refused:
            core.create_namespaced_config_map("default", {"metadata": {"name": "xray"}}, dry_run="All")
        assert refused.value.status == 400
        assert json.loads(refused.value.body)["message"] == \
            'admission webhook "names.example.com" denied the request: no names starting with x'
        assert [c.metadata.name for c in core.list_namespaced_config_map("default").items
                if c.metadata.name in ("ok", "xray")] == ["ok"]
