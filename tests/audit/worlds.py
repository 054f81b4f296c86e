"""A realistic platform for audit tests: a plan and a real repository with planted dependencies.

aws > prod (account) > eu-west-1 (region) > train-eu1 (cluster), and us-east-1 > serve-us1;
aws > security (account); github (provider). The DR repository lives in us-east-1.
Planted on the training cluster or its region (the audit must flag each):
  - an image only in the cluster's own registry, a Helm chart repo behind the cluster's
    ingress, a Vault inside the cluster, a Git remote inside the cluster with no copy,
    a checkpoint bucket in eu-west-1, dr's own image in the cluster's registry;
  - optionally: the DR target's credentials kept only in the cluster's secrets, the age key
    kept only in the cluster.
Independent (the audit must not flag): an image in us-east-1's ECR, a Git remote on
github.com, and a Git remote in the cluster whose repository the snapshot bundled (remapped).
"""

from __future__ import annotations

import os
from typing import Any

import yaml

from dr.model.artifacts import Dependency
from dr.repository.repositories import Repository
from dr.repository.stores.local import LocalStore
from dr.repository.writing import SnapshotWriter

ECR = "123456789012.dkr.ecr.us-east-1.amazonaws.com"
IN_CLUSTER_IMAGE = "registry.kube-system.svc.cluster.local:5000/team/trainer:v1"
ECR_IMAGE = f"{ECR}/team/serve:v2"
CHART_REPO = "https://charts.apps.train-eu1.example.com/stable"
VAULT = "https://vault.vault.svc.cluster.local:8200"
CKPT_BUCKET = "s3://ckpt-eu/llama-ft/step-1000/"
GITEA_BUNDLED = "https://gitea.apps.train-eu1.example.com/platform/declarations.git"
GITEA_UNCOPIED = "https://git.gitea.svc.cluster.local/platform/infra.git"
GITHUB_REMOTE = "git@github.com:acme/ml-platform.git"
UNPLACED = "https://data.partner.example.net/corpus/v3"
DR_IMAGE_IN_CLUSTER = "registry.kube-system.svc.cluster.local:5000/platform/dr:0.1.0"
DR_IMAGE_ECR = f"{ECR}/platform/dr:0.1.0"
CREDS_IN_CLUSTER = "k8s://train-eu1/secrets/dr-system/dr-bucket-writer"
CREDS_SURVIVING = "arn:aws:secretsmanager:us-east-1:123456789012:secret:dr/backup-reader"
KEY_ESCROW = "https://escrow.security.example.com/keys/dr-restore"
KEY_IN_CLUSTER = "k8s://train-eu1/secrets/dr-system/age-identity"
# A valid age public key (the tests never decrypt anything).
RECIPIENT = "age1ql3z7hjy54pw3hyww5ayyfg7zqgvc7w3j2elw8zmrj2kg5sfn9aqmcac8p"


def plan_data(repo_path: str, **changes: Any) -> dict:
    data = {
        "version": 1,
        "name": "ml-platform",
        "failure_domains": [
            {"name": "aws", "kind": "provider", "children": [
                {"name": "prod", "kind": "account", "children": [
                    {"name": "eu-west-1", "kind": "region",
                     "children": [{"name": "train-eu1", "kind": "cluster"}]},
                    {"name": "us-east-1", "kind": "region",
                     "children": [{"name": "serve-us1", "kind": "cluster"}]}]},
                {"name": "security", "kind": "account"}]},
            {"name": "github", "kind": "provider"},
        ],
        "locations": [
            {"name": "ckpt-eu", "domain": "eu-west-1", "kind": "bucket", "prefixes": ["s3://ckpt-eu/"]},
            {"name": "ecr-us", "domain": "us-east-1", "kind": "registry", "hosts": [ECR]},
            {"name": "github", "domain": "github", "kind": "git", "hosts": ["github.com"]},
            {"name": "key-escrow", "domain": "security", "kind": "secret-store",
             "hosts": ["escrow.security.example.com"]},
            {"name": "secrets-us", "domain": "us-east-1", "kind": "secret-store",
             "prefixes": ["arn:aws:secretsmanager:us-east-1:"]},
            {"name": "train-eu1-secrets", "domain": "train-eu1", "kind": "secret-store",
             "prefixes": ["k8s://train-eu1/"]},
        ],
        "placement_rules": [
            {"match": "*.svc.cluster.local", "domain": "train-eu1", "reason": "in-cluster service DNS"},
            {"match": "*.apps.train-eu1.example.com", "domain": "train-eu1",
             "reason": "the training cluster's ingress domain"},
            {"match": "*.eu-west-1.amazonaws.com", "domain": "eu-west-1", "reason": "regional endpoint"},
            {"match": "*.us-east-1.amazonaws.com", "domain": "us-east-1", "reason": "regional endpoint"},
        ],
        "protects_against": ["train-eu1", "eu-west-1"],
        "encryption": {"recipients": [RECIPIENT], "key_location": KEY_ESCROW},
        "targets": [{"name": "dr-us", "url": repo_path, "domain": "us-east-1",
                     "credentials_location": CREDS_SURVIVING}],
        "dr_image": DR_IMAGE_IN_CLUSTER,
        "sources": [
            {"name": "platform-k8s", "type": "kubernetes", "rpo": "1h"},
            {"name": "platform-helm", "type": "helm", "rpo": "1h"},
            {"name": "platform-git", "type": "git", "rpo": "1h"},
            {"name": "checkpoints", "type": "checkpoints", "rpo": "6h"},
        ],
    }
    for key, value in changes.items():
        data[key] = value
    return data


def write_plan(folder, data: dict) -> str:
    path = os.path.join(str(folder), "plan.yaml")
    with open(path, "w", encoding="utf-8") as handle:
        yaml.safe_dump(data, handle, sort_keys=False)
    return path


def open_repo(path: str) -> Repository:
    repo = Repository(LocalStore(path))
    repo.init()
    return repo


def dep(kind: str, reference: str, detail: str = "") -> Dependency:
    return Dependency(kind, reference, detail)


PLANTED = {
    "platform-k8s": [
        ("deployment", f"training/trainer-{i}", [dep("image", IN_CLUSTER_IMAGE, "spec.containers[0].image"),
                                                 dep("secret-store", VAULT, "vault.hashicorp.com/agent")])
        for i in range(3)
    ] + [
        ("deployment", "serving/api", [dep("image", ECR_IMAGE, "spec.containers[0].image")]),
        ("job", "data/ingest", [dep("dataset", UNPLACED, "spec.args[1]")]),
    ],
    "platform-helm": [("release", "training/training-stack", [dep("helm-repo", CHART_REPO, "chart.repository")])],
    "platform-git": [
        ("repository", "declarations", [dep("git-remote", GITEA_BUNDLED, "remote.origin")],
         {"provides": [GITEA_BUNDLED]}),
        ("repository", "ml-platform", [dep("git-remote", GITHUB_REMOTE, "remote.origin")],
         {"provides": [GITHUB_REMOTE]}),
        ("deploy-key", "infra", [dep("git-remote", GITEA_UNCOPIED, "argocd repository")]),
    ],
    "checkpoints": [("checkpoint", "llama-ft/step-1000", [dep("bucket", CKPT_BUCKET, "storage_uri")])],
}

CLEAN_SOURCES = [{"name": "platform-k8s", "type": "kubernetes", "rpo": "1h"},
                 {"name": "platform-git", "type": "git", "rpo": "1h"}]
CLEAN = {
    "platform-k8s": [("deployment", "serving/api", [dep("image", ECR_IMAGE, "spec.containers[0].image")])],
    "platform-git": [("repository", "ml-platform", [dep("git-remote", GITHUB_REMOTE, "remote.origin")])],
}


def backup(repo: Repository, contents: dict, plan_name: str = "ml-platform", findings: dict | None = None):
    """Write one snapshot: {source: [(kind, identity, [Dependency], meta?), ...]}; findings:
    {source: [finding, ...]} as exporters record them (kept in the manifest)."""
    writer = SnapshotWriter(repo, [], workers=2)
    results = []
    for source, artifacts in contents.items():
        sink = writer.source(source, source)
        for entry in artifacts:
            kind, identity, deps = entry[:3]
            meta = entry[3] if len(entry) > 3 else None
            sink.write(kind, identity, f"{source}:{kind}:{identity}".encode(), dependencies=deps, meta=meta)
        result = sink.commit()
        result.findings = list((findings or {}).get(source, []))
        results.append(result)
    snapshot = writer.finish(plan_name, results)
    writer.close()
    return snapshot
