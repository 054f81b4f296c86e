"""Opt-in: the volumes round trip against a REAL cluster with a CSI driver (issue 26, item 3).

The other tests of tests/volumes run against the emulated API server with the harness's CSI
driver and kubelet stand-ins; only a real cluster shows a real snapshotter, attach, image pull,
the pod security admission and the API server's own pod proxy. This test runs when given:

  DR_E2E_KUBECONFIG        the kubeconfig (required: without it the test is SKIPPED)
  DR_E2E_SOURCE_CONTEXT    the context (default: the kubeconfig's current one)
  DR_E2E_VOLUMES_IMAGE     dr's image, pullable by the cluster (required with the kubeconfig)
  DR_E2E_STORAGE_CLASS     a class of a CSI driver with a VolumeSnapshotClass
                           (default csi-hostpath-sc, the CSI hostpath driver's example)

It seeds a claim in a fresh namespace with a Job of dr's image, backs the claim up with
`dr backup`, restores it into a `-restored` twin namespace (--namespace-map), reads the
restored tree back with another Job, and compares. Both namespaces are removed at the end.
These are the suite's only skips (with tests/kubernetes/test_e2e_real_cluster.py).

Run: DR_E2E_KUBECONFIG=~/.kube/config DR_E2E_VOLUMES_IMAGE=registry.example/dr:0.9.0 \\
     .venv/bin/python -m pytest -m e2e tests/volumes
"""

from __future__ import annotations

import json
import os
import secrets
import time

import kubernetes
import pytest

from dr.cli.main import main
from tests.volumes.helpers import volumes_plan

KUBECONFIG = os.environ.get("DR_E2E_KUBECONFIG")
IMAGE = os.environ.get("DR_E2E_VOLUMES_IMAGE")
STORAGE_CLASS = os.environ.get("DR_E2E_STORAGE_CLASS", "csi-hostpath-sc")
pytestmark = [pytest.mark.e2e,
              pytest.mark.skipif(not KUBECONFIG, reason="DR_E2E_KUBECONFIG is not set: no real cluster to test against")]

SEED = """
import os
os.makedirs('/data/db/base', exist_ok=True)
for i in range(20):
    with open(f'/data/db/base/{i}.bin', 'wb') as f:
        f.write(os.urandom(100_000))
os.symlink('base/0.bin', '/data/db/first')
os.chmod('/data/db/base/1.bin', 0o600)
with open('/data/sparse', 'wb') as f:
    f.truncate(8 << 20)
"""
LIST = """
import hashlib, json, os
out = {}
for root, dirs, files in os.walk('/data'):
    for name in dirs + files:
        path = os.path.join(root, name)
        st = os.lstat(path)
        rel = os.path.relpath(path, '/data')
        if rel == 'lost+found' or rel.startswith('lost+found/'):
            continue
        facts = [st.st_mode, st.st_uid, st.st_gid]
        if os.path.islink(path):
            facts.append(os.readlink(path))
        elif os.path.isfile(path):
            facts += [st.st_size, hashlib.sha256(open(path, 'rb').read()).hexdigest()]
        out[rel] = facts
print(json.dumps(out, sort_keys=True))
"""


def _context() -> str:
    _, current = kubernetes.config.list_kube_config_contexts(KUBECONFIG)
    return os.environ.get("DR_E2E_SOURCE_CONTEXT") or current["name"]


@pytest.fixture
def api():
    if not IMAGE:
        pytest.fail("DR_E2E_KUBECONFIG is set but DR_E2E_VOLUMES_IMAGE is not: the mover needs dr's image")
    client = kubernetes.config.new_client_from_config(KUBECONFIG, context=_context())
    core, batch = kubernetes.client.CoreV1Api(client), kubernetes.client.BatchV1Api(client)
    name = f"dr-e2e-vol-{secrets.token_hex(3)}"
    core.create_namespace({"metadata": {"name": name}})
    try:
        yield name, core, batch
    finally:
        for namespace in (name, f"{name}-restored"):
            try:
                core.delete_namespace(namespace)
            except kubernetes.client.ApiException:
                pass


def _claim(core, namespace: str) -> None:
    core.create_namespaced_persistent_volume_claim(namespace, {
        "metadata": {"name": "data"},
        "spec": {"storageClassName": STORAGE_CLASS, "accessModes": ["ReadWriteOnce"],
                 "resources": {"requests": {"storage": "1Gi"}}}})


def _run(core, batch, namespace: str, name: str, program: str, timeout: float = 600) -> str:
    """Run `program` in dr's image with the claim at /data; its log once the Job completed."""
    batch.create_namespaced_job(namespace, {
        "metadata": {"name": name},
        "spec": {"backoffLimit": 0, "template": {"spec": {
            "restartPolicy": "Never",
            "containers": [{"name": "c", "image": IMAGE, "command": ["python", "-c", program],
                            "volumeMounts": [{"name": "data", "mountPath": "/data"}]}],
            "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "data"}}]}}}})
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status = batch.read_namespaced_job_status(name, namespace).status
        if status.succeeded:
            (pod,) = core.list_namespaced_pod(namespace, label_selector=f"job-name={name}").items
            return core.read_namespaced_pod_log(pod.metadata.name, namespace)
        assert not status.failed, f"Job {namespace}/{name} failed"
        time.sleep(2)
    raise AssertionError(f"Job {namespace}/{name} did not complete in {timeout:.0f} s")


def test_a_claim_round_trips_on_a_real_cluster(tmp_path, api, capsys):
    namespace, core, batch = api
    _claim(core, namespace)
    _run(core, batch, namespace, "seed", SEED)
    before = json.loads(_run(core, batch, namespace, "list", LIST).strip().splitlines()[-1])
    plan = volumes_plan(tmp_path, KUBECONFIG, _context(), namespaces=[namespace])
    with open(plan) as handle:
        text = handle.read().replace("registry.dr.example/platform/dr:0.9.0", IMAGE)
    with open(plan, "w") as handle:
        handle.write(text)
    assert main(["backup", "--plan", plan, "--json"]) == 0, capsys.readouterr()
    capsys.readouterr()
    code = main(["restore", "--plan", plan, "--source", "vols", "--to", f"vols={KUBECONFIG}:{_context()}",
                 "--namespace-map", f"{namespace}={namespace}-restored", "--json"])
    assert code == 0, capsys.readouterr().out
    after = json.loads(_run(core, batch, f"{namespace}-restored", "list", LIST).strip().splitlines()[-1])
    assert after == before
