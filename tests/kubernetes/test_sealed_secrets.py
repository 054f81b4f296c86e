"""Sealed-secrets keys proven at backup time: every SealedSecret opens with a backed-up key.

SealedSecrets here are sealed by this test's own implementation of the scheme the upstream
project documents (RSA-OAEP SHA-256 wrapping a 32-byte AES-256-GCM session key, zero nonce,
`len || rsa || aes`, the OAEP label from the scope), with real RSA keys; the twin of each
proof is a SealedSecret sealed with a key the backup does not hold (the controller renewed
its key after the last key backup). The cluster is the kmock emulator (tests/harness).
"""

from __future__ import annotations

import base64
import os

import pytest
import yaml
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from dr.exporters.kubernetes.resources import ResourceType
from dr.exporters.kubernetes.sealedsecrets import KEY_LABEL, SealedSecretsCheck, open_value
from tests.harness import EmulatedCluster, write_kubeconfig
from tests.harness.standins import _create_when_served
from tests.kubernetes.conftest import Pipeline

SECRET_TYPE = ResourceType("", "v1", "secrets", "Secret", True)
SEALED_TYPE = ResourceType("bitnami.com", "v1alpha1", "sealedsecrets", "SealedSecret", True)
CONTROLLER_NS = "sealed-secrets"  # the Helm chart's usual namespace (kube-system is not exported by default)


def new_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def seal(public: rsa.RSAPublicKey, plaintext: bytes, label: bytes) -> str:
    """The documented sealing: 2-byte big-endian RSA length, RSA-OAEP(session key), AES-GCM(value)."""
    session = os.urandom(32)
    wrapped = public.encrypt(session, padding.OAEP(mgf=padding.MGF1(hashes.SHA256()), algorithm=hashes.SHA256(),
                                                   label=label or None))
    sealed = len(wrapped).to_bytes(2, "big") + wrapped + AESGCM(session).encrypt(bytes(12), plaintext, None)
    return base64.b64encode(sealed).decode()


def key_secret(name: str, key: rsa.RSAPrivateKey, namespace: str = CONTROLLER_NS) -> dict:
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL,
                            serialization.NoEncryption())
    return {"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
            "metadata": {"name": name, "namespace": namespace, "labels": {KEY_LABEL: "active"}},
            "data": {"tls.key": base64.b64encode(pem).decode(), "tls.crt": base64.b64encode(b"cert").decode()}}


def sealed_secret(namespace: str, name: str, key: rsa.RSAPrivateKey, scope: str = "strict") -> dict:
    annotations = {"strict": {}, "namespace-wide": {"sealedsecrets.bitnami.com/namespace-wide": "true"},
                   "cluster-wide": {"sealedsecrets.bitnami.com/cluster-wide": "true"}}[scope]
    label = {"strict": f"{namespace}/{name}", "namespace-wide": namespace, "cluster-wide": ""}[scope].encode()
    return {"apiVersion": "bitnami.com/v1alpha1", "kind": "SealedSecret",
            "metadata": {"name": name, "namespace": namespace, "annotations": annotations},
            "spec": {"encryptedData": {"password": seal(key.public_key(), f"pw-{name}".encode(), label)},
                     "template": {"metadata": {"name": name, "namespace": namespace}}}}


@pytest.fixture(scope="module")
def keys():
    return {"backed-up": new_key(), "renewed": new_key()}


def check(objects: list[dict]) -> list[dict]:
    found = SealedSecretsCheck()
    for obj in objects:
        found.observe(SECRET_TYPE if obj["kind"] == "Secret" else SEALED_TYPE, obj)
    return list(found.findings())


@pytest.mark.parametrize("scope", ["strict", "namespace-wide", "cluster-wide"])
def test_a_sealed_secret_opens_with_its_backed_up_key_in_every_scope(keys, scope):
    assert check([key_secret("sealed-secrets-key1", keys["backed-up"]),
                  sealed_secret("team-a", "db", keys["backed-up"], scope)]) == []


def test_sealed_with_a_key_not_in_the_backup_is_a_finding(keys):
    [finding] = check([key_secret("sealed-secrets-key1", keys["backed-up"]),
                       sealed_secret("team-a", "db", keys["backed-up"]),
                       sealed_secret("team-a", "api", keys["renewed"])])
    assert finding["object"] == "SealedSecret/team-a/api" and finding["audit_code"] == "sealed-secret-key-missing"
    assert finding["blocks_recovery"] is True and f"Secret/{CONTROLLER_NS}/sealed-secrets-key1" in finding["message"]
    assert "pw-api" not in str(finding)


def test_the_label_binds_the_value_to_its_name(keys):
    """A strict SealedSecret moved to another name does not open: the check uses the real label."""
    moved = sealed_secret("team-a", "db", keys["backed-up"])
    moved["metadata"]["name"] = "db-copy"
    [finding] = check([key_secret("k1", keys["backed-up"]), moved])
    assert finding["object"] == "SealedSecret/team-a/db-copy"


def test_no_key_in_the_backup_says_so(keys):
    [finding] = check([sealed_secret("team-a", "db", keys["backed-up"])])
    assert f"no Secret labelled {KEY_LABEL}" in finding["message"]


def test_open_value_refuses_a_truncated_or_foreign_value(keys):
    sealed = base64.b64decode(seal(keys["backed-up"].public_key(), b"x", b"ns/n"))
    assert open_value(keys["backed-up"], sealed, b"ns/n") == b"x"
    assert open_value(keys["renewed"], sealed, b"ns/n") is None
    assert open_value(keys["backed-up"], sealed[:100], b"ns/n") is None


# -- a real backup of an emulated cluster, then the audit ---------------------------------------
CRD = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
       "metadata": {"name": "sealedsecrets.bitnami.com"},
       "spec": {"group": "bitnami.com", "scope": "Namespaced",
                "names": {"plural": "sealedsecrets", "singular": "sealedsecret", "kind": "SealedSecret",
                          "listKind": "SealedSecretList"},
                "versions": [{"name": "v1alpha1", "served": True, "storage": True,
                              "schema": {"openAPIV3Schema": {"type": "object",
                                                             "x-kubernetes-preserve-unknown-fields": True}}}]}}


def namespace(name: str) -> dict:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


@pytest.fixture
def cluster(tmp_path, keys, request):
    controller = getattr(request, "param", CONTROLLER_NS)
    source = EmulatedCluster(name="sealed").start()
    try:
        source.create_objects([CRD, namespace("team-a"), *([namespace(controller)] if controller != "kube-system" else []),
                               key_secret("sealed-secrets-key1", keys["backed-up"], controller)])
        _create_when_served(source, [sealed_secret("team-a", "db", keys["backed-up"]),
                                     sealed_secret("team-a", "api", keys["renewed"], "namespace-wide")])
        yield write_kubeconfig(os.path.join(tmp_path, "kubeconfig"), {"source": source}, current="source")
    finally:
        source.stop()


def test_backup_proves_each_sealed_secret_and_the_audit_blocks_on_the_one_that_does_not_open(
        tmp_path, cluster, keys):
    from dr.audit import choose_audited_target, run_audit, scenarios_for
    from dr.model.plan_loading import load_plan

    pipeline = Pipeline(tmp_path, cluster)
    done = pipeline.backup()
    unopened = [f for f in done.findings if f["code"] == "sealed-secret-unopenable"]
    assert [f["object"] for f in unopened] == ["SealedSecret/team-a/api"]
    assert not any(b"pw-db" in open(os.path.join(d, n), "rb").read()
                   for d, _, names in os.walk(pipeline.root) for n in names)

    data = {"version": 1, "name": "plan", "failure_domains": [{"name": "cluster-a", "kind": "cluster"},
                                                              {"name": "offsite", "kind": "site"}],
            "protects_against": ["cluster-a"], "targets": [{"name": "dr", "url": pipeline.root, "domain": "offsite"}],
            "sources": [{"name": "cluster", "type": "kubernetes"}]}
    (tmp_path / "plan.yaml").write_text(yaml.safe_dump(data))
    plan = load_plan(str(tmp_path / "plan.yaml"))
    scenarios = scenarios_for(plan)
    report = run_audit(plan, pipeline.repo, choose_audited_target(plan, scenarios), scenarios)
    [finding] = [f for f in report.findings if f.code == "sealed-secret-key-missing"]
    assert finding.severity == "blocker" and finding.reference == "SealedSecret/team-a/api"
    assert finding.runbook == "runbooks/sealed-secret-key-missing.md"


@pytest.mark.parametrize("cluster", ["kube-system"], indirect=True)
def test_keys_in_a_namespace_the_source_leaves_out_are_named_as_the_cause(tmp_path, cluster):
    """kube-system (the controller's default namespace) is excluded by default: nothing opens."""
    done = Pipeline(tmp_path, cluster).backup()
    unopened = sorted(f["object"] for f in done.findings if f["code"] == "sealed-secret-unopenable")
    assert unopened == ["SealedSecret/team-a/api", "SealedSecret/team-a/db"]
    assert all(f"no Secret labelled {KEY_LABEL} is in this backup" in f["message"] for f in done.findings
               if f["code"] == "sealed-secret-unopenable")
