"""The rendered deployment's CronJobs run as a kubelet would run them (issue 30, point 5):
tests/harness/kubelet.py starts every Job due at a tick at the same time, with the container's
exact command, environment, ConfigMap plan and Secret references, against moto S3, the emulated
Kubernetes API, a real etcd and a local git remote and files, pushing to a real Pushgateway that
a real Prometheus (tests/harness/day.py) scrapes every second, evaluating the rendered rules.

What runs here is the install (each CronJob once, docs/deploy.md) and the day's busiest tick,
00:00, where the three backup CronJobs (four sources) and the status start together. A whole day
of 96 ticks (tests/harness/day.py's Day) is not run: measured on this 2-core machine at load 9,
a Job took 28-48 s on average (7 CronJobs, one day at a 6 s tick: 703 s, status ran at 21 of 96
ticks and was skipped at 75 by Forbid), so with any compression that keeps the day within
minutes the staleness alerts fire because the machine is slow. A day's results are in
docs/deploy.md.

Time: dr and Prometheus read the wall clock, so a simulated quarter-hour is TICK real seconds
and every duration is scaled by 900 / TICK: the plan's RPOs are written in compressed
seconds and the rules' windows, `for:` and second constants are divided by it. A faked clock
for dr was not chosen: dr has none, and Prometheus could not share it.

Exporters: kubernetes (RBAC checked from the emulator's request log), files, git and etcd. Left
out: vault (a raft OpenBao takes ~8 s to start and unseal), dns, images, checkpoints and mlflow
(~0.5 GB, 8 s). The jobs run from the test's venv as the test's user (see USER), not the bare
install as uid 10001, which tests/shipping/test_bare_install.py covers.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
import uuid
from datetime import UTC, datetime
from pathlib import Path

import pytest
import yaml

from tests.deploy.conftest import RECIPIENT, documents, render
from tests.fixtures_s3 import s3_client
from tests.harness import EmulatedCluster
from tests.harness.day import Day, RulesPrometheus, scaled_rules
from tests.harness.kubelet import Kubelet, rbac_denials
from tests.servers import ServerProcess, etcd_server

pytestmark = pytest.mark.slow

# Real seconds per simulated quarter-hour: long enough that a tick's Jobs mostly end within it on a
# loaded 2-core machine (measured: a dr status against moto takes 3-16 s at load 9). DR_DAY_TICK
# sets another (a faster machine can take 2; the day then lasts 96 of them).
TICK = float(os.environ.get("DR_DAY_TICK", "6"))
RULES = os.path.join(os.path.dirname(__file__), "..", "..", "dr", "deploy", "prometheus-rules.yaml")
SECRET = {"aws-access-key-id": "testing", "aws-secret-access-key": "testing"}
# The pod's runAsUser is not taken: this venv's interpreter lives under /root (mode 0700), which
# uid 10001 cannot execute; tests/shipping/test_bare_install.py runs dr as 10001 from a bare venv.
USER = None
KEEP = 3  # each source's retention: keep_last


def _plan(tmp_path, bucket: str, moto: str, etcd: str, remote: str, scale: float) -> str:
    def _rpo(simulated_seconds: int) -> str:
        return f"{round(simulated_seconds / scale)}s"

    text = f"""\
version: 1
name: day-{bucket[-8:]}
failure_domains:
  - {{name: cloud, kind: provider, children: [{{name: region-a, kind: region}}, {{name: region-b, kind: region}}]}}
protects_against: [region-a]
encryption: {{recipients: [{RECIPIENT}]}}
targets:
  - {{name: dr, url: "s3://{bucket}/day", domain: region-b, region: us-east-1, endpoint_url: "{moto}"}}
dr_image: registry.example.com/dr:1.2
sources:
  - name: cluster
    type: kubernetes
    schedule: "0 * * * *"
    rpo: {_rpo(6 * 3600)}
    namespaces: [team-a]
    include_groups: [example.com]
    workload_kinds: [Deployment, Service]
    retention: {{keep_last: {KEEP}}}
  - name: etcd
    type: etcd
    schedule: "0 * * * *"
    rpo: {_rpo(6 * 3600)}
    clusters: [{{name: main, endpoints: ["{etcd}"]}}]
    retention: {{keep_last: {KEEP}}}
  - name: config
    type: files
    schedule: "*/30 * * * *"
    rpo: {_rpo(3 * 3600)}
    paths: ["{tmp_path}/config"]
    retention: {{keep_last: {KEEP}}}
  - name: code
    type: git
    schedule: "0 */2 * * *"
    rpo: {_rpo(8 * 3600)}
    repositories: [{{name: app, url: "{remote}"}}]
    retention: {{keep_last: {KEEP}}}
"""
    path = tmp_path / "day.yaml"
    path.write_text(text)
    return str(path)


def _git_remote(path) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@x", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@x"}
    subprocess.run(["git", "init", "-q", str(path)], check=True, env=env)
    (path / "README").write_text("app\n")
    subprocess.run(["git", "-C", str(path), "add", "README"], check=True, env=env)
    subprocess.run(["git", "-C", str(path), "commit", "-qm", "first"], check=True, env=env)
    return str(path)


def _populate(cluster: EmulatedCluster) -> None:
    cluster.create_objects([
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a"}},
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings", "namespace": "team-a"},
         "data": {"replicas": "3"}},
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "team-a"},
         "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
                  "template": {"metadata": {"labels": {"app": "web"}},
                               "spec": {"containers": [{"name": "web", "image": "nginx:1.27"}]}}}}])


class Deployment:
    """Everything one day needs: servers, the rendered objects, the kubelet and the day itself."""

    def __init__(self, tmp_path, moto: str, capsys, tick: float):
        self.tmp, self.moto = tmp_path, moto
        self.tick, self.scale = tick, 900 / tick
        self.bucket = f"dr-day-{uuid.uuid4().hex[:12]}"
        s3_client(moto).create_bucket(Bucket=self.bucket)
        (tmp_path / "config").mkdir()
        (tmp_path / "config" / "settings.yaml").write_text("replicas: 3\n")
        self.remote = _git_remote(tmp_path / "remote")
        self.capsys = capsys

    def start(self, stack) -> None:
        self.etcd = stack.enter_context(etcd_server(str(self.tmp / "etcd-data"), name="day"))
        self.cluster = stack.enter_context(EmulatedCluster("day"))
        _populate(self.cluster)
        self.gateway = stack.enter_context(ServerProcess(
            lambda port: ["prometheus-pushgateway", f"--web.listen-address=127.0.0.1:{port}", "--persistence.file="],
            lambda port: f"http://127.0.0.1:{port}/-/ready", name="pushgateway"))
        plan = _plan(self.tmp, self.bucket, self.moto, f"http://127.0.0.1:{self.etcd.port}", self.remote,
                     self.scale)
        code, out, err = render(["--plan", plan, "--pushgateway", f"http://127.0.0.1:{self.gateway.port}"],
                                self.capsys)
        assert code == 0, err
        self.documents = documents(out)
        self.kubelet = Kubelet(self.documents, SECRET, str(self.tmp / "pods"), user=USER,
                               kubeconfig=self._kubeconfig(),
                               path=os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"])
        self._readable()

    def _kubeconfig(self) -> str:
        path = self.cluster.kubeconfig_path(self.tmp, "in-cluster")
        os.chmod(path, 0o644)
        return path

    def _readable(self) -> None:
        """The git remote is another user's server: the pod's uid owns its copy (git refuses a
        repository owned by another user); everything else is only readable to it."""
        if USER is not None:
            subprocess.run(["chown", "-R", f"{USER}:{USER}", self.remote], check=True)
        (self.tmp / "pods").mkdir()
        os.chmod(self.tmp / "pods", 0o755)

    def install(self) -> None:
        """Each CronJob once, one after the other, before the day (docs/deploy.md)."""
        for name in sorted(self.kubelet.cronjobs, key=lambda n: "backup" not in n):
            self.kubelet.start(name, -1)
            (run,) = self.kubelet.reap(wait=True)
            assert run.code == 0, f"{name}: {run.output[-3000:]}"
        self.kubelet.tally = {name: type(tally)() for name, tally in self.kubelet.tally.items()}

    def watch(self, stack) -> None:
        """Prometheus with the rendered rules, started once everything has reported (before, the
        absent alerts would be right: nothing had)."""
        with open(RULES, encoding="utf-8") as handle:
            rules = scaled_rules(yaml.safe_load(handle), self.scale)
        self.prometheus = stack.enter_context(RulesPrometheus(self.gateway.port, rules))
        loaded = self.prometheus.wait_for("count(dr_backup_success)", lambda found: found)
        assert list(loaded.values()) == [4.0]

    def day(self, hooks=None, ticks: int = 96) -> Day:
        midnight = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
        day = Day(self.kubelet, self.prometheus, self.tick, midnight, ticks=ticks, hooks=hooks or {})
        day.run()
        return day


@pytest.fixture
def tick() -> float:
    """Real seconds per simulated quarter-hour (a test can parametrize its own)."""
    return TICK


@pytest.fixture
def deployment(aws_env, moto_endpoint, capsys, tick):
    # not pytest's tmp_path: its parents are root's alone, and the pods run as USER
    root = Path(tempfile.mkdtemp(prefix="dr-day-"))
    root.chmod(0o755)
    try:
        with contextlib.ExitStack() as stack:
            made = Deployment(root, moto_endpoint, capsys, tick)
            made.start(stack)
            made.install()
            made.watch(stack)
            yield made
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _rbac_holds(deployment: Deployment) -> None:
    accounts = {c["spec"]["jobTemplate"]["spec"]["template"]["spec"]["serviceAccountName"]
                for c in deployment.kubelet.cronjobs.values()}
    assert len(accounts) == 1, accounts  # one account: every logged request is held against its rules
    requests = deployment.cluster.requests
    assert any(r.resource == "deployments" and r.verb == "list" for r in requests)
    assert rbac_denials(deployment.documents, accounts.pop(), requests) == []


@pytest.mark.parametrize("tick", [60.0])  # a compressed quarter-hour longer than the install takes here
def test_the_midnight_tick(deployment):
    """00:00, the busiest tick: every backup CronJob and the status fire together. Each Job exits
    0, the Kubernetes requests are within the rendered RBAC, the metrics of all four sources reach
    Prometheus, which has loaded the scaled rules, and no alert fires."""
    day = deployment.day(ticks=1)
    with deployment.capsys.disabled():
        print("\nthe midnight tick\n" + day.table())
    started = {run.job for run in deployment.kubelet.finished if run.tick == 0}
    assert started == {"dr-backup-cluster", "dr-backup-config", "dr-backup-code", "dr-status"}
    assert {name: t.failed for name, t in deployment.kubelet.tally.items() if t.failed} == {}
    _rbac_holds(deployment)
    rules = deployment.prometheus.query_rules()
    assert len(rules) == 7 and all(r["health"] == "ok" for r in rules), rules
    ok = deployment.prometheus.wait_for("dr_backup_success == 1", lambda found: len(found) == 4)
    assert sorted(dict(k)["source"] for k in ok) == ["cluster", "code", "config", "etcd"]
    assert day.alerts == {} and deployment.prometheus.firing() == set()
