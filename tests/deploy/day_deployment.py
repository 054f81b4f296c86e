"""The deployment a simulated day runs: the servers, the plan, the rendered objects and the kubelet
(tests/deploy/test_day_in_cluster.py says what runs and how time is simulated)."""

from __future__ import annotations

import os
import subprocess
import uuid
from datetime import UTC, datetime
from pathlib import Path

import yaml

from tests.deploy.conftest import RECIPIENT, documents, render
from tests.deploy.day_sources import EveryType
from tests.fixtures_s3 import s3_client
from tests.harness import EmulatedCluster
from tests.harness.day import Day, RulesPrometheus, scaled_rules
from tests.harness.faked_day import faked_clock
from tests.harness.image_install import IMAGE_UID
from tests.harness.kubelet import Kubelet, rbac_denials
from tests.servers import ServerProcess, etcd_server

RULES = os.path.join(os.path.dirname(__file__), "..", "..", "dr", "deploy", "prometheus-rules.yaml")
SECRET = {"aws-access-key-id": "testing", "aws-secret-access-key": "testing"}
# The pods run as the image runs them (tests/harness/image_install.py): dr from a bare install of
# the build context, as uid 10001 (when the tests run as root), writing only its pod's folders.
USER = IMAGE_UID
KEEP = 3  # each source's retention: keep_last


def _plan(tmp_path, bucket: str, moto: str, etcd: str, remote: str, scale: float, more: EveryType | None) -> str:
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
    path.write_text(text + (more.sources(_rpo) if more else ""))
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

    def __init__(self, tmp_path, moto: str, capsys, tick: float, image: Path, every_type: bool = False):
        """image: the venv of the image's install (the `image_install` fixture)."""
        self.tmp, self.moto, self.image = tmp_path, moto, image
        self.tick, self.scale = tick, 900 / tick
        self.bucket = f"dr-day-{uuid.uuid4().hex[:12]}"
        s3_client(moto).create_bucket(Bucket=self.bucket)
        (tmp_path / "config").mkdir()
        (tmp_path / "config" / "settings.yaml").write_text("replicas: 3\n")
        self.remote = _git_remote(tmp_path / "remote")
        self.capsys = capsys
        self.more = EveryType(tmp_path, moto, self.bucket) if every_type else None

    def start(self, stack) -> None:
        self.etcd = stack.enter_context(etcd_server(str(self.tmp / "etcd-data"), name="day"))
        self.cluster = stack.enter_context(EmulatedCluster("day"))
        _populate(self.cluster)
        if self.more:
            self.more.start(stack)
        self.gateway = stack.enter_context(ServerProcess(
            lambda port: ["prometheus-pushgateway", f"--web.listen-address=127.0.0.1:{port}", "--persistence.file=",
                          "--web.enable-admin-api"],
            lambda port: f"http://127.0.0.1:{port}/-/ready", name="pushgateway"))
        self.plan = plan = _plan(self.tmp, self.bucket, self.moto, f"http://127.0.0.1:{self.etcd.port}", self.remote,
                     self.scale, self.more)
        code, out, err = render(["--plan", plan, "--pushgateway", f"http://127.0.0.1:{self.gateway.port}"],
                                self.capsys)
        assert code == 0, err
        self.documents = documents(out)
        secret = SECRET | (self.more.secret() if self.more else {})
        self.kubelet = Kubelet(self.documents, secret, str(self.tmp / "pods"), user=USER,
                               kubeconfig=self._kubeconfig(),
                               path=str(self.image / "bin") + os.pathsep + "/usr/bin:/bin")
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

    def install(self, when: datetime | None = None) -> None:
        """Each CronJob once, one after the other, before the day (docs/deploy.md); with `when`,
        on a clock faked to start then (tests.harness.faked_day)."""
        clock = faked_clock(when) if when else None
        for name in sorted(self.kubelet.cronjobs, key=lambda n: "backup" not in n):
            self.kubelet.start(name, -1, clock)
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


def rbac_holds(deployment: Deployment) -> None:
    accounts = {c["spec"]["jobTemplate"]["spec"]["template"]["spec"]["serviceAccountName"]
                for c in deployment.kubelet.cronjobs.values()}
    assert len(accounts) == 1, accounts  # one account: every logged request is held against its rules
    requests = deployment.cluster.requests
    assert any(r.resource == "deployments" and r.verb == "list" for r in requests)
    assert rbac_denials(deployment.documents, accounts.pop(), requests) == []
