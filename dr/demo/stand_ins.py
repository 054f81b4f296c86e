"""The demo's stand-ins: a platform in region-a and a DR site in region-b, as local files.

Where it sits: dr.demo.walkthrough builds these first, then runs dr's real commands on them.
build_stand_ins() writes a Git remote of platform declarations, a configuration directory (with
a secret in it), an age key pair (the private half "kept offline") and the plan naming them,
with the optional parts (a stand-in cluster, registries, an OpenBao, an MLflow server) that the
walkthrough was given.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from urllib.parse import urlsplit

from dr.demo.vault import VaultStandIn, plan_parts
from dr.repository.encryption import generate_identity

PLAN = """\
# A DR plan for the demo's stand-ins. See README.md, "Plans", for every field.
version: 1
name: demo
description: Local stand-ins for an AI platform cluster and its DR site.
failure_domains:
  - name: local
    kind: provider
    children:
      - name: region-a
        kind: region
        children:
          - {{name: cluster-a, kind: cluster}}
      - name: region-b
        kind: region
locations:
  - {{name: cluster-a-storage, domain: cluster-a, kind: volume, prefixes: ["{root}/platform"]}}
  - {{name: offline-keys, domain: region-b, kind: key-store, prefixes: ["{root}/keys"]}}
  - {{name: dr-site-disk, domain: region-b, kind: repository, prefixes: ["{root}/repository", "{root}/dr-site"]}}
{registry_locations}placement_rules:
  - {{match: "*.svc.cluster.local", domain: cluster-a, reason: in-cluster service DNS}}
protects_against: [cluster-a, region-a]
encryption:
  recipients: ["{recipient}"]
  key_location: "{root}/keys/identity.txt"
targets:
  - {{name: dr-site, url: "{root}/repository", domain: region-b}}
retention: {{keep_last: 5, keep_daily: 7}}
# Planted problem for the demo's audit: dr's own image is pulled from the cluster's in-cluster
# registry, so when cluster-a is lost, the tool you need to recover cannot even start.
dr_image: "{dr_image}"
sources:
  - name: platform-declarations
    type: git
    schedule: "0 * * * *"
    rpo: 1h
    repositories:
      - {{name: platform, url: "{root}/platform/declarations.git"}}
  - name: platform-config
    type: files
    schedule: "*/15 * * * *"
    rpo: 15m
    paths: ["{root}/platform/config"]
  - name: platform-secrets
    type: files
    sensitivity: secret
    schedule: "*/15 * * * *"
    rpo: 15m
    paths: ["{root}/platform/secrets"]
"""


CHECKPOINTS_SOURCE = """\
  - name: training
    type: checkpoints
    rpo: 1h
    roots: ["{root}/platform/checkpoints"]
    dr_copy: "{root}/dr-site/checkpoints"
    settle_seconds: 0
readiness: {{mtbf_hours: 24, gpus: 8, gpu_cost_per_hour: 2.5{runs}}}
"""

# With --with-training: how `dr drill --training run-a` resumes the trained run (docs/readiness.md,
# section 7): the shipped loop under torchrun at the drill's world size, from the restored copy.
TRAINING_RUNS = """, runs: [{{run: run-a, resume: {{command: {command}, env: {{OMP_NUM_THREADS: "1"}}, steps: 10,
  time_limit: 5m, failed_log: "{log}", tolerance: 0.00001}}}}]"""

# The cluster's images, copied by digest to the DR registry: the trainer's (found in the
# Deployment the kubernetes source backs up) and dr's own (listed). The in-cluster registry's
# name resolves only inside the cluster; `endpoints` says where dr reaches it from outside.
IMAGES_SOURCE = """\
  - name: images
    type: images
    to: ["{dr_registry}/mirror"]
    images: ["{dr_image}"]
    endpoints: {{"{in_cluster}": "{registry}"}}
"""
DR_REGISTRY_LOCATION = """\
  - {{name: dr-registry, domain: region-b, kind: registry, prefixes: ["{url}", "{host}/"]}}
"""
IN_CLUSTER_REGISTRY = "registry.kube-system.svc.cluster.local:5000"
DR_IMAGE = f"{IN_CLUSTER_REGISTRY}/platform/dr:0.1.0"

KUBERNETES_SOURCE = """\
  - name: cluster-a-config
    type: kubernetes
    kubeconfig: "{kubeconfig}"
    context: cluster-a
    workload_kinds: [Deployment]
"""


def build_stand_ins(root: str, kubeconfig: str | None = None, registries: tuple[str, str] | None = None,
                    vault: VaultStandIn | None = None, mlflow_plan: tuple[str, str] | None = None) -> tuple[str, str]:
    """`mlflow_plan`: the model registry's location and source, for the plan."""
    platform = os.path.join(root, "platform")
    _write(f"{platform}/config/kueue/cluster-queue.yaml", "apiVersion: kueue.x-k8s.io/v1beta1\n"
           "kind: ClusterQueue\nmetadata: {name: team-a}\nspec: {namespaceSelector: {}}\n")
    _write(f"{platform}/config/training/defaults.yaml", "checkpoint_every: 500\nkeep_last: 3\n")
    os.makedirs(f"{platform}/config/empty-dir", exist_ok=True)
    _write(f"{platform}/secrets/registry-token", "demo-token-ShouldNeverBeStoredInPlaintext\n")
    os.chmod(f"{platform}/secrets/registry-token", 0o600)
    _make_git_remote(platform)
    identity, recipient = generate_identity()
    _write(f"{root}/keys/identity.txt", f"# the private key: kept offline, needed only to restore\n{identity}\n")
    os.chmod(f"{root}/keys/identity.txt", 0o600)
    plan_path = os.path.join(root, "plan.yaml")
    locations = DR_REGISTRY_LOCATION.format(url=registries[1], host=urlsplit(registries[1]).netloc) \
        if registries else ""
    vault_locations, vault_source = plan_parts(vault)
    locations += mlflow_plan[0] if mlflow_plan else ""
    plan = PLAN.format(root=root, recipient=recipient, registry_locations=locations + vault_locations,
                       dr_image=DR_IMAGE) + vault_source
    if kubeconfig:
        plan += KUBERNETES_SOURCE.format(kubeconfig=os.path.abspath(kubeconfig))
    if registries:
        plan += IMAGES_SOURCE.format(dr_registry=registries[1], dr_image=DR_IMAGE, in_cluster=IN_CLUSTER_REGISTRY,
                                     registry=registries[0])
    plan += mlflow_plan[1] if mlflow_plan else ""
    _write(plan_path, plan)
    return plan_path, f"{root}/keys/identity.txt"


def _make_git_remote(platform: str) -> None:
    work = os.path.join(platform, "declarations-work")
    bare = os.path.join(platform, "declarations.git")
    env = {**os.environ, "GIT_AUTHOR_NAME": "demo", "GIT_AUTHOR_EMAIL": "demo@example.invalid",
           "GIT_COMMITTER_NAME": "demo", "GIT_COMMITTER_EMAIL": "demo@example.invalid"}

    def git(*argv: str, cwd: str = work) -> None:
        subprocess.run(["git", *argv], cwd=cwd, env=env, check=True, capture_output=True)

    _write(f"{work}/clusters/a/kueue.yaml", "# Kueue queues for cluster-a\n")
    os.makedirs(bare)
    git("init", "--bare", "-q", cwd=bare)
    git("init", "-q", "-b", "main")
    git("add", ".")
    git("commit", "-q", "-m", "platform declarations")
    git("tag", "v1")
    git("push", "-q", bare, "main", "--tags")
    shutil.rmtree(work)


def _write(path: str, text: str) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)
