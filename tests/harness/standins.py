"""A stand-in platform cluster for `dr demo`: an emulated API server with an AI team's objects.

Two emulated clusters: `cluster-a` (populated: a team namespace, config, a secret, a trainer
Deployment whose image lives in the cluster's own registry, and Kueue quotas when the upstream
Kueue CRDs are beside the checkout) and `recovery` (empty, where the demo restores to).
Run as `python -m tests.harness.standins KUBECONFIG`: writes the kubeconfig, prints READY,
serves until terminated. Emulated, not real: see tests/harness/kube.py for the differences.
"""

from __future__ import annotations

import os
import signal
import sys
import threading

import yaml

from tests.harness.kube import EmulatedCluster, write_kubeconfig
from tests.upstream_fixtures import FIXTURES

KUEUE = str(FIXTURES / "kueue")  # optional here: the demo runs without them
IN_CLUSTER_IMAGE = "registry.kube-system.svc.cluster.local:5000/team-a/trainer:v3"


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


def main() -> None:
    source, recovery = start(sys.argv[1])
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    print("READY", flush=True)
    try:
        done.wait()
    except KeyboardInterrupt:
        pass
    finally:
        source.stop()
        recovery.stop()


if __name__ == "__main__":
    main()
