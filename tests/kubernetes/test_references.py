"""The reference scan: every string of an object, exact kinds for well-known fields (issue 10).

Hand-written objects stand for each kind the issue names (Argo CD, Flux, cert-manager, External
Secrets, ServiceAccounts, a CronJob's env); the upstream examples check that the scan finds
what they reference and nothing that is not a reference.
"""

from __future__ import annotations

import pytest

from dr.exporters.kubernetes.references import HostPatterns, find
from dr.exporters.kubernetes.remapping import Remap
from dr.exporters.kubernetes.resources import ResourceType
from dr.exporters.kubernetes.scanning import Scanner
from dr.model.locations import Location, PlacementRule, Placer, canonical_image, host_of
from tests.kubernetes.upstream import FIXTURES, upstream


def refs(obj: dict, hosts=()) -> set[tuple[str, str]]:
    return {(d.kind, d.reference) for d in Scanner(hosts).scan(obj)[0]}


def details(obj: dict, hosts=()) -> dict[str, str]:
    return {d.reference: d.detail for d in Scanner(hosts).scan(obj)[0]}


def _cronjob(env: list[dict], args: list[str] = (), image: str = "busybox") -> dict:
    container = {"name": "sync", "image": image, "env": env, "args": list(args)}
    return {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "sync", "namespace": "ml"},
            "spec": {"schedule": "0 * * * *", "jobTemplate": {"spec": {"template": {"spec": {
                "restartPolicy": "Never", "containers": [container]}}}}}}


# -- Docker Hub short names -----------------------------------------------------------------------
@pytest.mark.parametrize("written, canonical", [
    ("busybox", "docker.io/library/busybox"),
    ("llamacpp-worker:latest", "docker.io/library/llamacpp-worker:latest"),
    ("org/img", "docker.io/org/img"),
    ("nginx@sha256:" + "a" * 64, "docker.io/library/nginx@sha256:" + "a" * 64),
    ("registry.internal:5000/ml/server:1.2", "registry.internal:5000/ml/server:1.2"),
    ("localhost/x:1", "localhost/x:1"),
    ("ghcr.io/acme/eval:1", "ghcr.io/acme/eval:1"),
])
def test_docker_hub_short_names_name_docker_io_not_a_host(written, canonical):
    assert canonical_image(written) == canonical
    assert refs(_cronjob([], image=written)) == {("image", canonical)}
    assert host_of(canonical) == host_of(canonical_image(canonical))
    assert host_of(canonical) != written.split(":")[0] or "." in written


def test_a_registry_remap_of_docker_io_rewrites_short_names_as_the_scan_records_them():
    remap = Remap(registries={"docker.io": "mirror.dr.example"})
    assert remap.image("busybox") == "mirror.dr.example/library/busybox"
    assert remap.image("org/img:1") == "mirror.dr.example/org/img:1"
    assert remap.image("ghcr.io/a/b:1") == "ghcr.io/a/b:1"
    job = _cronjob([])
    Remap(registries={"docker.io/library": "mirror.dr.example/hub"}).apply(
        ResourceType("batch", "v1", "cronjobs", "CronJob", True), job)
    assert job["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]["image"] == \
        "mirror.dr.example/hub/busybox"


# -- the generic pass: every string ---------------------------------------------------------------
def test_a_bucket_in_an_env_value_or_an_arg_is_a_dependency_with_its_path():
    job = _cronjob([{"name": "DATA", "value": "s3://ml-data-eu-west-1/train/"},
                    {"name": "OUT", "value": "gs://ckpt/out"}],
                   args=["--model=hf://meta/llama", "--to", "az://store/x"])
    found = refs(job)
    assert {("bucket", "s3://ml-data-eu-west-1/train/"), ("bucket", "gs://ckpt/out"),
            ("bucket", "hf://meta/llama"), ("bucket", "az://store/x")} <= found
    where = details(job)
    assert where["s3://ml-data-eu-west-1/train/"] == \
        "CronJob/ml/sync .spec.jobTemplate.spec.template.spec.containers[0].env[0].value"
    assert where["az://store/x"] == "CronJob/ml/sync .spec.jobTemplate.spec.template.spec.containers[0].args[2]"


@pytest.mark.parametrize("text, expected", [
    ("https://api.example.com/v1", ("http-endpoint", "https://api.example.com/v1")),
    ("clone https://git.example.com/org/repo.git now", ("git-remote", "https://git.example.com/org/repo.git")),
    ("git@github.com:org/repo.git", ("git-remote", "git@github.com:org/repo.git")),
    # user names are redacted as the git exporter records remotes: one form to compare
    ("ssh://git@git.internal:2222/org/repo", ("git-remote", "ssh://***@git.internal:2222/org/repo")),
    ("git://git.internal/repo", ("git-remote", "git://git.internal/repo")),
    ("oci://registry.internal/charts", ("registry", "oci://registry.internal/charts")),
    ("postgres://db.internal:5432/app", ("database", "postgres://db.internal:5432/app")),
    ("(see https://docs.example.com/a).", ("http-endpoint", "https://docs.example.com/a")),
])
def test_urls_are_classified_by_scheme(text, expected):
    assert [(kind, reference) for kind, reference, _ in find(text, HostPatterns(()))] == [expected]


def test_credentials_in_a_url_never_reach_the_catalog():
    [(kind, reference, _)] = find("postgres://app:hunter2@db.internal/app", HostPatterns(()))
    assert "hunter2" not in reference and kind == "database"


def test_local_schemes_and_plain_words_are_not_references():
    for text in ("file:///etc/config", "unix:///var/run/sock", "hello world", "1.27", "a.b.c",
                 "app.kubernetes.io/name", "user@example.com"):
        assert list(find(text, HostPatterns(()))) == [], text


def test_a_service_dns_name_resolves_to_that_service():
    job = _cronjob([{"name": "MLFLOW", "value": "http://mlflow.ml.svc.cluster.local:5000"},
                    {"name": "REDIS", "value": "redis.cache.svc:6379"}])
    found = refs(job)
    assert ("service", "redis.cache.svc.cluster.local") in found  # a bare name: the Service is the dependency
    # in a URL the URL is the dependency (one problem, counted once); its detail names the Service
    assert ("http-endpoint", "http://mlflow.ml.svc.cluster.local:5000") in found
    assert ("service", "mlflow.ml.svc.cluster.local") not in found
    assert details(job)["http://mlflow.ml.svc.cluster.local:5000"].endswith(
        ".env[0].value (resolves to Service mlflow.ml.svc.cluster.local)")


def test_bare_host_names_count_only_when_the_plan_places_them():
    job = _cronjob([{"name": "REGISTRY", "value": "registry.cluster-a.internal:5000"},
                    {"name": "IMAGE", "value": "registry.cluster-a.internal:5000/ml/worker:2"},
                    {"name": "OTHER", "value": "some.dotted.words"}])
    assert refs(job) == {("image", "docker.io/library/busybox")}
    placer = Placer([Location("reg", "cluster-a", hosts=["registry.cluster-a.internal"])],
                    [PlacementRule("*.cluster-a.internal", "cluster-a")])
    found = refs(job, placer.host_patterns())
    assert ("host", "registry.cluster-a.internal:5000") in found
    assert ("image", "registry.cluster-a.internal:5000/ml/worker:2") in found
    assert not any("dotted" in r for _, r in found)


def test_a_catch_all_rule_does_not_turn_every_word_into_a_host():
    assert not HostPatterns(["*", "*.*"])
    assert refs(_cronjob([{"name": "V", "value": "a.b"}]), ["*"]) == {("image", "docker.io/library/busybox")}


def test_images_under_any_image_key_and_in_configmaps():
    custom = {"apiVersion": "example.com/v1", "kind": "Notebook", "metadata": {"name": "n", "namespace": "ds"},
              "spec": {"image": "jupyter/base:1", "sidecarImage": "quay.io/x/y:2"}}
    assert refs(custom) == {("image", "docker.io/jupyter/base:1"), ("image", "quay.io/x/y:2")}
    config = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "ds"},
              "data": {"settings.yaml": "tracking: https://mlflow.example.com\nstore: s3://models/\n"}}
    assert refs(config) == {("http-endpoint", "https://mlflow.example.com"), ("bucket", "s3://models/")}


def test_secret_values_metadata_and_status_are_not_scanned():
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "n"},
              "data": {"url": "aHR0cHM6Ly94"}, "stringData": {"url": "https://secret.example.com"}}
    assert refs(secret) == set()
    documented = {"apiVersion": "v1", "kind": "ConfigMap", "status": {"url": "https://status.example.com"},
                  "metadata": {"name": "c", "namespace": "n", "annotations": {"docs": "https://docs.example.com"}}}
    assert refs(documented) == set()


# -- well-known fields: exact kinds ----------------------------------------------------------------
def test_argo_cd_application_repo_urls_are_git_remotes_or_chart_repos():
    app = {"apiVersion": "argoproj.io/v1alpha1", "kind": "Application", "metadata": {"name": "a", "namespace": "argocd"},
           "spec": {"source": {"repoURL": "http://gitea.git.svc.cluster.local:3000/platform/config", "path": "x"},
                    "sources": [{"repoURL": "https://charts.example.com", "chart": "model-server"}],
                    "destination": {"server": "https://kubernetes.default.svc", "namespace": "ml"}}}
    found = refs(app)
    assert ("git-remote", "http://gitea.git.svc.cluster.local:3000/platform/config") in found
    assert ("helm-chart-repo", "https://charts.example.com") in found
    assert ("kubernetes-api", "https://kubernetes.default.svc") in found
    assert not any(kind == "http-endpoint" for kind, _ in found)  # the exact kind wins, once
    assert details(app)["http://gitea.git.svc.cluster.local:3000/platform/config"] == \
        "Application/argocd/a .spec.source.repoURL (resolves to Service gitea.git.svc.cluster.local)"


def test_flux_sources():
    def flux(kind: str, spec: dict) -> dict:
        return {"apiVersion": "source.toolkit.fluxcd.io/v1", "kind": kind,
                "metadata": {"name": "s", "namespace": "flux-system"}, "spec": spec}
    assert ("git-remote", "ssh://***@git.internal/org/fleet") in \
        refs(flux("GitRepository", {"url": "ssh://git@git.internal/org/fleet", "secretRef": {"name": "deploy-key"}}))
    assert ("secret", "secret:flux-system/deploy-key") in \
        refs(flux("GitRepository", {"url": "https://x/y", "secretRef": {"name": "deploy-key"}}))
    assert ("helm-chart-repo", "https://charts.example.com") in refs(flux("HelmRepository", {"url": "https://charts.example.com"}))
    assert ("registry", "oci://ghcr.io/org/charts") in refs(flux("HelmRepository", {"url": "oci://ghcr.io/org/charts", "type": "oci"}))
    assert ("bucket", "https://minio.cluster-a.internal/fleet") in \
        refs(flux("Bucket", {"bucketName": "fleet", "endpoint": "minio.cluster-a.internal"}))


def test_cert_manager_issuers_name_their_vault_their_ca_and_their_secrets():
    vault = {"apiVersion": "cert-manager.io/v1", "kind": "ClusterIssuer", "metadata": {"name": "vault"},
             "spec": {"vault": {"server": "https://vault.cluster-a.internal:8200", "path": "pki/sign/x",
                                "auth": {"tokenSecretRef": {"name": "vault-token", "key": "token"}}}}}
    assert refs(vault) == {("secret-store", "https://vault.cluster-a.internal:8200"),
                           ("secret", "secret:cert-manager/vault-token")}
    acme = {"apiVersion": "cert-manager.io/v1", "kind": "Issuer", "metadata": {"name": "le", "namespace": "web"},
            "spec": {"acme": {"server": "https://acme-v02.api.letsencrypt.org/directory",
                              "privateKeySecretRef": {"name": "le-account"}}}}
    assert refs(acme) == {("certificate-authority", "https://acme-v02.api.letsencrypt.org/directory"),
                          ("secret", "secret:web/le-account")}
    certificate = {"apiVersion": "cert-manager.io/v1", "kind": "Certificate", "metadata": {"name": "c", "namespace": "web"},
                   "spec": {"secretName": "c-tls", "issuerRef": {"name": "vault", "kind": "ClusterIssuer"}}}
    assert refs(certificate) == {("issuer", "clusterissuer:vault")}


def test_external_secrets_provider_blocks_keep_their_exact_kind():
    store = {"apiVersion": "external-secrets.io/v1beta1", "kind": "ClusterSecretStore", "metadata": {"name": "vault"},
             "spec": {"provider": {"vault": {"server": "https://vault.cluster-a.internal:8200", "path": "secret"}}}}
    assert refs(store) == {("secret-store", "https://vault.cluster-a.internal:8200")}
    assert details(store)["https://vault.cluster-a.internal:8200"] == "ClusterSecretStore/vault .spec.provider.vault.server"


def test_a_service_account_needs_its_pull_secrets():
    account = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "ml", "namespace": "team"},
               "imagePullSecrets": [{"name": "regcred"}]}
    assert refs(account) == {("secret", "secret:team/regcred")}


def test_load_balancer_annotations_name_their_acm_certificates():
    """An ACM certificate lives in one region: the certificates exporter's audit rule judges it."""
    east = "arn:aws:acm:us-east-1:123456789012:certificate/aaaa-1111"
    west = "arn:aws:acm:us-west-2:123456789012:certificate/bbbb-2222"
    ingress = {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": {
        "name": "api", "namespace": "web",
        "annotations": {"alb.ingress.kubernetes.io/certificate-arn": f"{east}, {west}",
                        "alb.ingress.kubernetes.io/scheme": "internet-facing"}}, "spec": {}}
    assert refs(ingress) == {("acm-certificate", east), ("acm-certificate", west)}
    service = {"apiVersion": "v1", "kind": "Service", "metadata": {
        "name": "nlb", "namespace": "web",
        "annotations": {"service.beta.kubernetes.io/aws-load-balancer-ssl-cert": east}}, "spec": {}}
    assert refs(service) == {("acm-certificate", east)}
    # the twin: other annotations, and a value that is not an ACM ARN, are nothing
    plain = {"apiVersion": "v1", "kind": "Service", "metadata": {
        "name": "x", "namespace": "web",
        "annotations": {"service.beta.kubernetes.io/aws-load-balancer-ssl-cert": "not-an-arn"}}, "spec": {}}
    assert refs(plain) == set()


# -- the upstream examples ----------------------------------------------------------------------
def test_upstream_examples_yield_only_real_references():
    """Every example the fixtures hold: the scan finds their images and no noise (no URL, host or
    bucket appears in them, and their dotted label keys and versions are not references)."""
    kinds = set()
    for path in sorted(FIXTURES.glob("*/examples/*.yaml")):
        for doc in upstream(str(path.relative_to(FIXTURES))):
            for kind, reference in refs(doc, ["*.cluster-a.internal"]):
                kinds.add(kind)
                if kind == "image":
                    assert host_of(reference) in {"docker.io", "registry.k8s.io", "us-central1-docker.pkg.dev",
                                                  "gcr.io", "quay.io"}, reference
    assert kinds <= {"image", "secret", "configmap", "storage-class", "service"}, kinds


def test_upstream_crds_are_not_scanned_for_their_documentation_links():
    crds = upstream("cert-manager/crds/cert-manager.io_clusterissuers.yaml")
    assert all(refs(crd) == set() for crd in crds)


# -- cloud keys and resources, trigger metadata, asserted names (issue 25, item 6) ---------------
KMS_ARN = "arn:aws:kms:eu-central-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab"


@pytest.mark.parametrize("text, expected", [
    (KMS_ARN, {("kms", KMS_ARN)}),
    ("alias: arn:aws:kms:us-east-1:111122223333:alias/ebs.", {("kms", "arn:aws:kms:us-east-1:111122223333:alias/ebs")}),
    ("arn:aws:secretsmanager:eu-central-1:111122223333:secret:db-AbCdEf",
     {("secret-store", "arn:aws:secretsmanager:eu-central-1:111122223333:secret:db-AbCdEf")}),
    ("arn:aws:sqs:eu-central-1:111122223333:jobs", {("cloud-resource", "arn:aws:sqs:eu-central-1:111122223333:jobs")}),
    ("projects/ml-prod/locations/europe-west4/keyRings/disks/cryptoKeys/pd",
     {("kms", "projects/ml-prod/locations/europe-west4/keyRings/disks/cryptoKeys/pd")}),
    # global: recorded, and placed in no region (dr/model/regions.py): lost with the provider only
    ("arn:aws:iam::111122223333:role/keda", {("cloud-resource", "arn:aws:iam::111122223333:role/keda")}),
    ("arn:aws:s3:::bucket", {("cloud-resource", "arn:aws:s3:::bucket")}),
    ("not-an-arn:aws:kms:eu-central-1:1:key/x", set()),
])
def test_cloud_keys_and_regional_arns_are_found_in_any_string(text, expected):
    assert {(k, r) for k, r, _ in find(text, HostPatterns([]))} == expected
    obj = {"apiVersion": "example.com/v1", "kind": "Thing", "metadata": {"name": "t"}, "spec": {"x": {"y": text}}}
    assert refs(obj) == expected


def test_a_storage_class_kms_key_and_keda_trigger_metadata_are_scanned():
    storage = {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "enc"},
               "provisioner": "ebs.csi.aws.com", "parameters": {"encrypted": "true", "kmsKeyId": KMS_ARN}}
    assert details(storage) == {KMS_ARN: "StorageClass/enc .parameters.kmsKeyId"}
    scaled = {"apiVersion": "keda.sh/v1alpha1", "kind": "ScaledObject",
              "metadata": {"name": "q", "namespace": "ml", "annotations": {"note": "s3://not-a-dependency/"}},
              "spec": {"triggers": [{"type": "aws-sqs-queue", "metadata": {
                  "queueURL": "https://sqs.eu-central-1.amazonaws.com/111122223333/jobs", "awsRegion": "eu-central-1"}}]}}
    assert details(scaled) == {"https://sqs.eu-central-1.amazonaws.com/111122223333/jobs":
                               "ScaledObject/ml/q .spec.triggers[0].metadata.queueURL"}


def test_names_an_object_asserts_or_serves_are_not_dependencies():
    hosts = ["*.cluster-a.internal"]
    certificate = {"apiVersion": "cert-manager.io/v1", "kind": "Certificate", "metadata": {"name": "w", "namespace": "ml"},
                   "spec": {"secretName": "w-tls", "dnsNames": ["hook.ml.svc", "m.cluster-a.internal"],
                            "commonName": "m.cluster-a.internal", "issuerRef": {"name": "ca", "kind": "Issuer"}}}
    assert refs(certificate, hosts) == {("issuer", "issuer:ml/ca")}
    ingress = {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": {"name": "w", "namespace": "ml"},
               "spec": {"tls": [{"hosts": ["m.cluster-a.internal"], "secretName": "t"}],
                        "rules": [{"host": "m.cluster-a.internal", "http": {"paths": [{"path": "/", "backend": {
                            "service": {"name": "x", "port": {"number": 80}}}}]}}]}}
    assert refs(ingress, hosts) == set()
    assert ingress["spec"]["rules"][0]["host"] == "m.cluster-a.internal"  # the object itself is left as it was
    # the same names elsewhere are still references
    assert refs({**ingress, "kind": "Other", "apiVersion": "example.com/v1"}, hosts) == {("host", "m.cluster-a.internal")}
