"""The Job runner (tests/harness/jobs.py), which STANDS FOR THE KUBELET AND THE JOB CONTROLLER (no node
runs pods here): a Job's container runs as a local process with its claim's directory (from the CSI
driver stand-in, tests/harness/volumes.py) for the mount; the emulated API server's pod proxy
(tests/harness/kube.py) reaches it over real HTTP, streaming bodies both ways."""

from __future__ import annotations

import base64
import hashlib
import os
import sys
import time

import pytest
import requests

from tests.harness.jobs import JobRunner
from tests.harness.volumes import CsiStandIn, delete

LABELS = {"app.kubernetes.io/component": "volume-mover"}
AUTH = {"Authorization": "Bearer emulated-token"}

# A pod's server: serves the --dir folder (GET), stores PUT/POST bodies and answers their size,
# digest and the Authorization header it saw; /echo answers its own path and query.
SERVER = r"""
import hashlib, http.server, os, sys
args = sys.argv[1:]
port, root = int(args[args.index("--port") + 1]), args[args.index("--dir") + 1]
class Handler(http.server.SimpleHTTPRequestHandler):
    def __init__(self, *a, **k):
        super().__init__(*a, directory=root, **k)
    def do_GET(self):
        if not self.path.startswith("/echo"):
            return super().do_GET()
        body = self.path.encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("X-Pod", os.environ.get("POD_NAME", ""))
        self.end_headers()
        self.wfile.write(body)
    def do_PUT(self):
        left = total = int(self.headers["Content-Length"])
        digest = hashlib.sha256()
        with open(os.path.join(root, self.path.lstrip("/")), "wb") as f:
            while left:
                chunk = self.rfile.read(min(left, 1 << 20))
                if not chunk:
                    break
                digest.update(chunk)
                f.write(chunk)
                left -= len(chunk)
        body = f"{total - left} {digest.hexdigest()} {self.headers.get('Authorization')}".encode()
        self.send_response(201)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    do_POST = do_PUT
http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()
"""


@pytest.fixture
def env(cluster, tmp_path):
    ns = f"jobs-{time.monotonic_ns() % 10**9}"
    cluster.create_objects([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}])
    with CsiStandIn(cluster, tmp_path / "csi") as csi, JobRunner(cluster, csi, tmp_path / "pods") as runner:
        yield {"cluster": cluster, "csi": csi, "runner": runner, "ns": ns}


def claim(name, ns):
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name, "namespace": ns},
            "spec": {"storageClassName": "csi-hostpath-sc", "accessModes": ["ReadWriteOnce"],
                     "resources": {"requests": {"storage": "100Mi"}}}}


def job(name, ns, argv, *, claim_name="data", read_only=False, ports=(), deadline=None, env=()):
    spec = {"backoffLimit": 0, "template": {"metadata": {"labels": LABELS}, "spec": {
        "restartPolicy": "Never",
        "containers": [{"name": "mover", "image": "registry.dr.example/dr:0.9.0", "command": argv,
                        "ports": [{"containerPort": p} for p in ports], "env": list(env),
                        "volumeMounts": [{"name": "data", "mountPath": "/data", "readOnly": read_only},
                                         {"name": "scratch", "mountPath": "/scratch"}]}],
        "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": claim_name}},
                    {"name": "scratch", "emptyDir": {}}]}}}
    if deadline is not None:
        spec["activeDeadlineSeconds"] = deadline
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": name, "namespace": ns, "labels": LABELS}, "spec": spec}


def wait_for(fn, timeout=15.0, what="condition"):
    deadline = time.monotonic() + timeout
    while not (value := fn()):
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.03)
    return value


def condition(cluster, name, ns):
    status = (cluster.get_object("batch/v1", "Job", name, ns) or {}).get("status") or {}
    done = [c for c in status.get("conditions") or [] if c["type"] in ("Complete", "Failed")]
    return done and (done[0]["type"], done[0].get("reason"), status)


class Zeros:
    """A 50 MB request body made on the fly (requests streams a file-like object with a length)."""

    def __init__(self, size):
        self.left, self.size = size, size
        self.digest = hashlib.sha256()

    def __len__(self):
        return self.size

    def read(self, n=-1):
        n = self.left if n is None or n < 0 else min(n, self.left)
        chunk = bytes([n % 251]) * n
        self.left -= n
        self.digest.update(chunk)
        return chunk


def test_a_jobs_pod_serves_its_claim_through_the_api_servers_pod_proxy(env):
    cluster, csi, runner, ns = env["cluster"], env["csi"], env["runner"], env["ns"]
    cluster.create_objects([claim("data", ns)])
    payload = os.urandom(300_000)
    with open(os.path.join(csi.directory_of(ns, "data"), "file.bin"), "wb") as f:
        f.write(payload)
    cluster.create_objects([job("serve", ns, [sys.executable, "-c", SERVER, "--port", "8080", "--dir", "/data"],
                                ports=[8080], env=[{"name": "POD_NAME", "valueFrom": {
                                    "fieldRef": {"fieldPath": "metadata.name"}}}])])
    pod_name = runner.pod_name("serve", ns)
    pod = wait_for(lambda: (p := cluster.get_object("v1", "Pod", pod_name, ns))
                   and (p.get("status") or {}).get("phase") == "Running" and p, what="the pod Running")
    assert pod["metadata"]["labels"]["job-name"] == "serve" and pod["metadata"]["labels"]["batch.kubernetes.io/job-name"]
    assert pod["metadata"]["ownerReferences"][0]["kind"] == "Job"
    assert pod["status"]["podIP"] == "127.0.0.1"
    assert cluster.get_object("batch/v1", "Job", "serve", ns)["status"]["active"] == 1
    base = f"{cluster.url}/api/v1/namespaces/{ns}/pods"

    got = requests.get(f"{base}/{pod_name}:8080/proxy/file.bin", headers=AUTH, timeout=30)
    assert got.status_code == 200, got.text
    assert got.content == payload
    echo = requests.get(f"{base}/http:{pod_name}:8080/proxy/echo/a%20b?x=1&y=2", headers=AUTH, timeout=30)
    assert echo.text == "/echo/a%20b?x=1&y=2" and echo.headers["X-Pod"] == pod_name
    assert requests.get(f"{base}/{pod_name}/proxy/echo", timeout=30).text == "/echo"  # the first port

    big = Zeros(50 * 1024 * 1024)
    put = requests.put(f"{base}/{pod_name}:8080/proxy/upload.bin", data=big, headers=AUTH, timeout=120)
    assert put.status_code == 201, put.text
    size, digest, authorization = put.text.split()
    assert int(size) == 50 * 1024 * 1024 and digest == big.digest.hexdigest()
    assert authorization == "None"  # the API server does not hand the client's credentials on
    assert os.path.getsize(os.path.join(csi.directory_of(ns, "data"), "upload.bin")) == 50 * 1024 * 1024
    (record,) = [r for r in cluster.requests if r.method == "PUT" and r.subresource == "proxy"]
    assert (record.verb, record.resource, record.namespace, record.name, record.status, record.size) == \
        ("update", "pods", ns, f"{pod_name}:8080", 201, 50 * 1024 * 1024)

    missing_port = requests.get(f"{base}/{pod_name}:9999/proxy/", timeout=30)
    assert missing_port.status_code == 503 and missing_port.json()["reason"] == "ServiceUnavailable"
    assert requests.get(f"{base}/nope:8080/proxy/", timeout=30).status_code == 404

    process = runner.run_of("serve", ns).process
    delete(cluster, "batch/v1", "Job", "serve", ns)
    wait_for(lambda: process.poll() is not None, what="the process killed")
    wait_for(lambda: cluster.get_object("v1", "Pod", pod_name, ns) is None, what="the pod deleted")
    assert requests.get(f"{base}/{pod_name}:8080/proxy/file.bin", timeout=30).status_code == 404


def test_jobs_end_complete_failed_or_past_their_deadline(env):
    cluster, csi, runner, ns = env["cluster"], env["csi"], env["runner"], env["ns"]
    cluster.create_objects([claim("data", ns), {"apiVersion": "v1", "kind": "Secret",
                                                "metadata": {"name": "creds", "namespace": ns},
                                                "data": {"token": base64.b64encode(b"s3cr3t").decode()}}])
    write = ("import os, sys; open(os.environ['OUT'], 'w').write(os.environ['TOKEN'] + ' ' + sys.argv[1]"
             " + ' ' + str(os.path.isdir(sys.argv[1])))")
    cluster.create_objects([
        job("ok", ns, [sys.executable, "-c", write, "/scratch"],
            env=[{"name": "OUT", "value": "/data/out.txt"},
                 {"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "token"}}},
                 {"name": "NONE", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "x", "optional": True}}}]),
        job("three", ns, [sys.executable, "-c", "print('giving up'); raise SystemExit(3)"]),
        job("slow", ns, [sys.executable, "-c", "import time; time.sleep(60)"], deadline=1)])
    ok = wait_for(lambda: condition(cluster, "ok", ns), what="ok to end")
    assert ok[:2] == ("Complete", None) and ok[2]["succeeded"] == 1 and "active" not in ok[2], runner.output("ok", ns)
    with open(os.path.join(csi.directory_of(ns, "data"), "out.txt")) as f:
        token, scratch, is_dir = f.read().split()
    assert token == "s3cr3t" and is_dir == "True" and scratch.startswith(str(runner.root))
    three = wait_for(lambda: condition(cluster, "three", ns), what="three to end")
    assert three[:2] == ("Failed", "BackoffLimitExceeded") and three[2]["failed"] == 1
    assert runner.wait("three", ns) == 3 and "giving up" in runner.output("three", ns)
    pod = cluster.get_object("v1", "Pod", runner.pod_name("three", ns), ns)
    assert pod["status"]["phase"] == "Failed"
    assert pod["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 3
    began = time.monotonic()
    slow = wait_for(lambda: condition(cluster, "slow", ns), what="slow to be stopped")
    assert slow[:2] == ("Failed", "DeadlineExceeded") and time.monotonic() - began < 10
    assert runner.run_of("slow", ns).process.poll() is not None


def test_a_read_only_claim_mount_refuses_writes(env):
    cluster, csi, runner, ns = env["cluster"], env["csi"], env["runner"], env["ns"]
    assert runner.read_only_enforced, "this machine cannot make read-only bind mounts (root and mount needed)"
    cluster.create_objects([claim("data", ns)])
    with open(os.path.join(csi.directory_of(ns, "data"), "kept.txt"), "w") as f:
        f.write("kept")
    attempt = ("import os, sys\nprint(open(os.path.join(sys.argv[1], 'kept.txt')).read())\ntry:\n"
               "    open(os.path.join(sys.argv[1], 'new.txt'), 'w')\nexcept OSError as e:\n    print(e)\n"
               "    sys.exit(e.errno)")
    cluster.create_objects([job("ro", ns, [sys.executable, "-c", attempt, "/data"], read_only=True)])
    code = runner.wait("ro", ns, timeout=30)
    assert code == 30, runner.output("ro", ns)  # EROFS
    assert "kept" in runner.output("ro", ns)
    assert not os.path.exists(os.path.join(csi.directory_of(ns, "data"), "new.txt"))
    assert not any(os.path.ismount(os.path.join(root, d)) for root, dirs, _ in os.walk(runner.root) for d in dirs)
