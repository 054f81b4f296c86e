"""Back up a real-world cluster through the real pipeline, restore it into an empty one, compare.

Source: the upstream Kueue, cert-manager and LeaderWorkerSet CRDs and examples, plus Secrets,
ConfigMaps, RBAC, a Helm release in Helm's own encoding, a Certificate and its Secret.
"""

from __future__ import annotations

import base64
import gzip
import os

import kubernetes

from dr.contract import OutcomeStatus
from dr.model.artifacts import Sensitivity
from tests.kubernetes.comparing import differences
from tests.kubernetes.conftest import failures, statuses
from tests.kubernetes.upstream import CANARY, HELM_CANARY

NEVER = [("kueue.x-k8s.io/v1beta2", "Workload"), ("acme.cert-manager.io/v1", "Order"),
         ("acme.cert-manager.io/v1", "Challenge"), ("cert-manager.io/v1", "CertificateRequest")]


def exported_types(backup) -> list[tuple[str, str]]:
    metas = [a.meta for a in backup.artifacts if a.kind == "kubernetes-objects"]
    return sorted({(f"{m['group']}/{m['version']}" if m["group"] else m["version"], m["kind"]) for m in metas})


def test_round_trip_restores_every_object_and_a_second_restore_changes_nothing(pipeline, source, dest):
    backup = pipeline.backup()
    types = exported_types(backup)
    assert {("kueue.x-k8s.io/v1beta2", "ClusterQueue"), ("cert-manager.io/v1", "Certificate"),
            ("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet"), ("v1", "Secret")} <= set(types)

    first = pipeline.restore(backup.artifacts)
    assert failures(first) == []
    assert statuses(first)["restored"] > 40
    assert differences(source, dest, types) == []
    for api_version, kind in NEVER:
        assert source.list_objects(api_version, kind), f"the source should hold a {kind}"
        assert dest.list_objects(api_version, kind) == [], f"{kind} must never be restored"

    before = dest.resource_version
    second = pipeline.restore(backup.artifacts)
    assert {o.status for o in second} <= {OutcomeStatus.UNCHANGED, OutcomeStatus.SKIPPED}, failures(second)
    assert statuses(second)["unchanged"] == statuses(first)["restored"] + statuses(first).get("unchanged", 0)
    assert dest.resource_version == before, "an all-unchanged restore must not write anything"
    assert dest.count(verb="update") == 0 and dest.count(verb="delete") == 0


def test_the_certificate_secret_keeps_its_owner_with_the_new_uid(pipeline, dest):
    pipeline.restore(pipeline.backup().artifacts)
    certificate = dest.get_object("cert-manager.io/v1", "Certificate", "web", "team-a")
    secret = dest.get_object("v1", "Secret", "web-tls", "team-a")
    assert [(r["kind"], r["name"], r["uid"]) for r in secret["metadata"]["ownerReferences"]] == [
        ("Certificate", "web", certificate["metadata"]["uid"])]


def test_exclusions_and_runtime_fields(pipeline):
    backup = pipeline.backup()
    identities = backup.identities()
    assert not any(i.startswith(("workloads.kueue", "orders.acme", "challenges.acme", "certificaterequests."))
                   for i in identities)
    assert "customresourcedefinitions.apiextensions.k8s.io" in identities
    assert not any(i.endswith(("/kube-system", "/kube-public")) for i in identities)
    # The CRDs of never-exported types are still exported: Kueue needs its Workload CRD.
    crds = next(a for a in backup.artifacts if a.identity == "customresourcedefinitions.apiextensions.k8s.io")
    assert "customresourcedefinition:workloads.kueue.x-k8s.io" in crds.meta["provides"]


def test_secrets_and_helm_values_are_encrypted(pipeline):
    backup = pipeline.backup()
    secret_artifacts = [a for a in backup.artifacts if a.identity.startswith("secrets/")]
    assert secret_artifacts and all(a.sensitivity == Sensitivity.SECRET and a.encrypted for a in secret_artifacts)
    helm = [a for a in backup.artifacts if a.kind == "helm-release"]
    assert helm and all(a.encrypted for a in helm)
    others = [a for a in backup.artifacts if a.kind == "kubernetes-objects" and not a.identity.startswith("secrets/")]
    assert others and not any(a.encrypted for a in others)
    needles = [n.encode() for n in (CANARY, HELM_CANARY)]
    needles += [base64.b64encode(n) for n in needles]
    for folder, _, files in os.walk(pipeline.root):
        for name in files:
            data = open(os.path.join(folder, name), "rb").read()
            if data[:2] == b"\x1f\x8b":
                data += gzip.decompress(data)
            for needle in needles:
                assert needle not in data, f"{needle!r} in plaintext in {os.path.join(folder, name)}"


def test_an_unchanged_cluster_reuses_every_artifact(pipeline, source):
    first = pipeline.backup()
    second = pipeline.backup()
    assert second.stats["artifacts_reused"] == second.stats["artifacts"] == first.stats["artifacts"]
    assert second.stats["blobs_uploaded"] <= 1  # the catalog, at most
    source.create_objects([{"apiVersion": "v1", "kind": "ConfigMap",
                            "metadata": {"name": "late", "namespace": "team-b"}, "data": {"k": "v"}}])
    try:
        third = pipeline.backup()
        assert third.stats["artifacts"] - third.stats["artifacts_reused"] == 1
        changed = {a.identity: a.meta["change_token"] for a in third.artifacts if a.kind == "kubernetes-objects"}
        before = {a.identity: a.meta["change_token"] for a in second.artifacts if a.kind == "kubernetes-objects"}
        assert [i for i in changed if changed[i] != before.get(i)] == ["configmaps/team-b"]
    finally:
        kubernetes.client.CoreV1Api(source.api_client()).delete_namespaced_config_map("late", "team-b")


def test_dependencies_and_what_each_artifact_provides(pipeline):
    backup = pipeline.backup()
    deps = {(d.kind, d.reference) for a in backup.artifacts for d in a.dependencies}
    assert {("image", "registry.internal:5000/ml/server:1.2"), ("image", "docker.io/library/busybox:1.36"),
            ("image", "docker.io/nginxinc/nginx-unprivileged:1.27"), ("secret", "secret:team-a/db"),
            ("secret", "secret:team-a/regcred"), ("configmap", "configmap:team-a/settings"),
            ("storage-class", "storageclass:default"),
            ("webhook-service", "kueue-webhook-service.kueue-system.svc.cluster.local"),
            ("helm-chart", "https://charts.example.com/model-server/model-server:1.4.2")} <= deps
    details = {d.detail for a in backup.artifacts for d in a.dependencies if d.reference == "docker.io/library/busybox:1.36"}
    assert details == {"CronJob/team-b/nightly .spec.jobTemplate.spec.template.spec.initContainers[0].image"}
    provided = {p for a in backup.artifacts for p in a.meta.get("provides", [])}
    assert {"secret:team-a/db", "configmap:team-a/settings", "storageclass:default",
            "helm-release:team-a/model-server"} <= provided
    helm = {a.identity: a.meta for a in backup.artifacts if a.kind == "helm-release"}
    assert helm["team-a/model-server/v2"]["chart"]["version"] == "1.4.2"


def test_without_the_key_secrets_fail_with_a_reason_and_the_rest_is_restored(pipeline, dest):
    backup = pipeline.backup()
    pipeline.identities = []
    outcomes = pipeline.restore(backup.artifacts)
    failed = [o for o in outcomes if o.status == OutcomeStatus.FAILED]
    assert failed and all(o.item.startswith("secrets/") and "identity" in o.reason for o in failed)
    assert dest.get_object("v1", "ConfigMap", "settings", "team-a") is not None
    assert dest.get_object("v1", "Secret", "db", "team-a") is None


def test_restored_content_reads_every_object_back_and_names_the_batches_that_differ(pipeline, dest):
    """What dr drill compares: after a restore every batch equals the backup (the fields the
    destination's API server sets left out); a changed ConfigMap and a deleted Secret differ."""
    from dr.contract import ExportContext, RestoreRequest
    from dr.drills.comparing import difference
    from dr.exporters.kubernetes import KubernetesExporter
    from dr.repository.reading import ArtifactReader

    backup = pipeline.backup()
    reader = ArtifactReader(pipeline.repo, pipeline.identities)
    by_identity = {a.identity: a for a in backup.artifacts}

    def compared() -> dict:
        exporter = KubernetesExporter(ExportContext("cluster", pipeline.options(), base_dir="/"))
        request = RestoreRequest(to=f"{pipeline.kubeconfig}:dest")
        return {c.item: difference(c, by_identity[c.item], reader)
                for c in exporter.restored_content(backup.artifacts, reader, request)}
    objects = {a.identity for a in backup.artifacts if a.kind == "kubernetes-objects"}
    before = compared()  # an empty cluster holds a few objects of its own (its default namespace ...)
    assert sum(d == "nothing of it is at the destination" for d in before.values()) > len(objects) / 2
    assert failures(pipeline.restore(backup.artifacts)) == []
    found = compared()
    assert set(found) == objects and {i: d for i, d in found.items() if d} == {}

    core = kubernetes.client.CoreV1Api(dest.api_client())
    core.patch_namespaced_config_map("settings", "team-a", {"data": {"mode": "garbled"}})
    core.delete_namespaced_secret("db", "team-a")
    differing = {i: d for i, d in compared().items() if d}
    assert sorted(differing) == ["configmaps/team-a", "secrets/team-a"], differing
    secrets = next(a for a in backup.artifacts if a.identity == "secrets/team-a").meta["objects"]
    assert f"fingerprint {secrets - 1}/{secrets} objects" in differing["secrets/team-a"]
