"""The Kubernetes executor against the emulated API server (tests/harness/kube.py).

The coordinator (a real backup) creates the shard Job and its ConfigMap through the API and
watches the Job. The emulator has no controllers and no kubelet, so Jobs never run by
themselves: THE TEST PLAYS THE KUBELET. It reads the Job the coordinator created, runs its
container command as local processes of dr itself (the ConfigMap's files in a folder standing
for the mount, JOB_COMPLETION_INDEX set per index), and reports the indexes' ends by patching
the Job's status subresource, as the Job controller would. Source and DR buckets are on two
real moto servers, as in test_sharding.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
import time

import kubernetes
import pytest

from dr.exporters.checkpoints.copies.layout import MANIFEST, MARKER
from dr.exporters.checkpoints.sharding.kubernetes import MOUNT, index_set
from dr.exporters.checkpoints.copies.layout import canonical
from dr.exporters.checkpoints.sharding.tasks import digest
from tests.checkpoints.test_exporter_helpers import make_exporter
from tests.checkpoints.test_sharding import (PREFIX, _copy_is_the_source, _lines, _puts, copy_findings,  # noqa: F401
                                             logged_moto, sharded)
from tests.fixtures_s3 import s3_client
from tests.harness import EmulatedCluster, write_kubeconfig

IMAGE = "registry.dr.example/platform/dr:0.9.0@sha256:" + "ab" * 32


@pytest.fixture(scope="module")
def cluster():
    with EmulatedCluster(name="shards") as c:
        yield c
        assert c.errors == [], "the emulator hit internal errors:\n" + "\n".join(c.errors)


@pytest.fixture
def on_cluster(sharded, cluster, tmp_path):  # noqa: F811 (the fixture imported above)
    api = cluster.api_client()
    ns = f"dr-{os.getpid()}-{time.monotonic_ns() % 10**6}"
    kubernetes.client.CoreV1Api(api).create_namespace({"metadata": {"name": ns}})
    kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", {"shards": cluster})
    sharded["options"]["shards"] |= {"executor": "kubernetes", "parallelism": 3, "retries": 1,
                                     "kubernetes": {"kubeconfig": str(kubeconfig), "namespace": ns, "image": IMAGE}}
    return sharded | {"api": api, "ns": ns}


class Kubelet(threading.Thread):
    """Waits for a shard Job, runs its indexes as local processes (all but `fail`), then writes
    the status the Job controller would."""

    def __init__(self, api, ns: str, fail: set[int] = frozenset()) -> None:
        super().__init__(daemon=True)
        self.batch, self.core = kubernetes.client.BatchV1Api(api), kubernetes.client.CoreV1Api(api)
        self.ns, self.fail = ns, set(fail)
        self.job: dict | None = None
        self.config_map = None
        self.ran: dict[int, int] = {}
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            self._play()
        except BaseException as exc:  # reported by the test
            self.error = exc

    def _play(self) -> None:
        deadline = time.monotonic() + 60
        while not self.job and time.monotonic() < deadline:
            jobs = self.batch.list_namespaced_job(self.ns, label_selector="app.kubernetes.io/component=shard")
            fresh = [j for j in jobs.items if not (j.status and j.status.conditions)]
            if fresh:
                self.job = self.batch.api_client.sanitize_for_serialization(fresh[0])
            time.sleep(0.05)
        assert self.job, "no shard Job was created"
        name, spec = self.job["metadata"]["name"], self.job["spec"]
        self.config_map = self.core.read_namespaced_config_map(name, self.ns)
        container = spec["template"]["spec"]["containers"][0]
        with tempfile.TemporaryDirectory() as mount:  # stands for the ConfigMap volume
            for file, text in self.config_map.data.items():
                with open(os.path.join(mount, file), "w") as out:
                    out.write(text)
            command = [sys.executable if a == "python" else a.replace(MOUNT, mount) for a in container["command"]]
            pods = {index: subprocess.Popen(command, env={**os.environ, "JOB_COMPLETION_INDEX": str(index)},
                                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                    for index in range(spec["completions"]) if index not in self.fail}
            self.ran = {index: pod.wait(60) for index, pod in pods.items()}
        done = ",".join(str(i) for i in sorted(self.ran) if self.ran[i] == 0)
        status = {"completedIndexes": done, "succeeded": len(done.split(",")) if done else 0}
        if self.fail:
            status |= {"failedIndexes": ",".join(map(str, sorted(self.fail))), "failed": len(self.fail),
                       "conditions": [{"type": "Failed", "status": "True", "reason": "FailedIndexes",
                                       "message": "Job has failed indexes"}]}
        else:
            status["conditions"] = [{"type": "Complete", "status": "True"}]
        self.batch.patch_namespaced_job_status(name, self.ns, {"status": status})


def task_job_name(task: dict) -> str:
    return f"dr-shards-{digest(canonical(task))[:12]}"


def _backup_with(env, kubelet: Kubelet):
    kubelet.start()
    backup = env["repo"].backup(make_exporter(env["options"]))
    kubelet.join(30)
    assert kubelet.error is None, kubelet.error
    return backup


def test_the_job_is_indexed_runs_drs_image_and_the_copy_publishes_once_it_completes(on_cluster):
    env = on_cluster
    kubelet = Kubelet(env["api"], env["ns"])
    backup = _backup_with(env, kubelet)
    assert copy_findings(backup) == [], backup.findings
    spec = kubelet.job["spec"]
    assert (spec["completionMode"], spec["completions"], spec["parallelism"], spec["backoffLimitPerIndex"]) == \
        ("Indexed", 4, 3, 1)
    assert spec["maxFailedIndexes"] == 4  # every index runs to its end
    pod = spec["template"]["spec"]
    (container,) = pod["containers"]
    assert container["image"] == IMAGE and pod["restartPolicy"] == "Never"
    assert container["command"][:3] == ["python", "-m", "dr.exporters.checkpoints.sharding"]
    secrets = {e["name"]: e["valueFrom"]["secretKeyRef"]["name"] for e in container["env"] if "valueFrom" in e}
    assert secrets == {"AWS_ACCESS_KEY_ID": "dr-credentials", "AWS_SECRET_ACCESS_KEY": "dr-credentials"}
    assert {"name": "shard", "configMap": {"name": kubelet.job["metadata"]["name"]}} in pod["volumes"]
    owner = kubelet.config_map.metadata.owner_references[0]
    assert (owner.kind, owner.name, owner.uid) == ("Job", kubelet.job["metadata"]["name"], kubelet.job["metadata"]["uid"])
    assert kubelet.ran == {0: 0, 1: 0, 2: 0, 3: 0}
    _copy_is_the_source(env)
    assert _puts(_lines(env), f"{PREFIX}/{MARKER}") == 1


def test_a_failed_index_leaves_no_marker_and_the_next_job_finishes_the_copy(on_cluster):
    env = on_cluster
    backup = _backup_with(env, Kubelet(env["api"], env["ns"], fail={2}))
    (finding,) = copy_findings(backup)
    assert finding["code"] == "checkpoint-copy-failed", finding
    assert "shard 2 of 4: failed after 2 attempt(s)" in finding["message"] and "FailedIndexes" in finding["message"]
    assert "shard 0" not in finding["message"]
    keys = {o["Key"].rsplit("/", 1)[-1] for o in s3_client(env["b"]).list_objects_v2(
        Bucket=env["dr"], Prefix=PREFIX).get("Contents", [])}
    assert MARKER not in keys and MANIFEST not in keys

    task = json.loads(s3_client(env["b"]).get_object(Bucket=env["dr"], Key=f"{PREFIX}/dr-shards/task.json")
                      ["Body"].read())
    share_2 = {f["rel"] for f in task["shards"][2]}

    mark = len(_lines(env))
    kubelet = Kubelet(env["api"], env["ns"])  # the next backup: the same task, a new Job of the same name
    assert copy_findings(_backup_with(env, kubelet)) == []
    assert kubelet.job["metadata"]["name"] == task_job_name(task)
    _copy_is_the_source(env)
    assert _puts(_lines(env), f"{PREFIX}/{MARKER}") == 1
    # shards 0, 1 and 3 had stored their files: the second Job uploads only shard 2's share, and
    # the coordinator the marker file COMPLETE (written last, after every shard verified)
    again = _lines(env)[mark:]
    assert {rel for rel in env["source"] if _puts(again, f"{PREFIX}/{rel}")} == share_2 | {"COMPLETE"}


def test_index_lists_are_read_as_the_job_status_writes_them():
    assert index_set("0-2,5,7-8") == {0, 1, 2, 5, 7, 8}
    assert index_set("") == set() and index_set(None) == set()
