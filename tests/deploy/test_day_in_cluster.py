"""The rendered deployment's CronJobs run as a kubelet would run them (issue 30, point 5):
tests/harness/kubelet.py starts every Job due at a tick at the same time, with the container's
exact command, environment, ConfigMap plan and Secret references, against moto S3, the emulated
Kubernetes API, a real etcd and a local git remote and files, pushing to a real Pushgateway that
a real Prometheus (tests/harness/day.py) scrapes every second, evaluating the rendered rules.

What runs here is the install (each CronJob once, docs/deploy.md) and the day's busiest tick,
00:00, where the three backup CronJobs (four sources) and the status start together. A whole day
of 96 ticks on this wall clock is not run: measured on this 2-core machine at load 9, a Job took
28-48 s on average (7 CronJobs, one day at a 6 s tick: 703 s, status ran at 21 of 96 ticks and
was skipped at 75 by Forbid), so with any compression that keeps the day within minutes the
staleness alerts fire because the machine is slow. The whole day runs on a faked clock instead,
with nothing scaled: tests/deploy/test_faked_day.py.

Time: dr and Prometheus read the wall clock, so a simulated quarter-hour is TICK real seconds
and every duration is scaled by 900 / TICK: the plan's RPOs are written in compressed
seconds and the rules' windows, `for:` and second constants are divided by it (here a real
Prometheus scrapes the real Pushgateway and loads the rules; test_faked_day.py evaluates them
with promtool over a faked day instead).

Exporters: kubernetes (RBAC checked from the emulator's request log), files, git and etcd. Left
out here: vault (a raft OpenBao takes ~8 s to start and unseal), dns, images, checkpoints and
mlflow (~0.5 GB, 8 s); the whole faked days run one of each (tests/deploy/day_sources.py). The
jobs run as the image runs them: from a bare install of the build context, as uid 10001
(tests/harness/image_install.py).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from pathlib import Path

import pytest

from tests.deploy.day_deployment import Deployment, rbac_holds
from tests.metrics.test_alert_rules import ALERTS

pytestmark = pytest.mark.slow

# Real seconds per simulated quarter-hour: long enough that a tick's Jobs mostly end within it on a
# loaded 2-core machine (measured: a dr status against moto takes 3-16 s at load 9). DR_DAY_TICK
# sets another (a faster machine can take 2; the day then lasts 96 of them).
TICK = float(os.environ.get("DR_DAY_TICK", "6"))
@pytest.fixture
def tick() -> float:
    """Real seconds per simulated quarter-hour (a test can parametrize its own)."""
    return TICK


@pytest.fixture
def deployment(aws_env, moto_endpoint, capsys, tick, image_install):
    # not pytest's tmp_path: its parents are root's alone, and the pods run as USER
    root = Path(tempfile.mkdtemp(prefix="dr-day-"))
    root.chmod(0o755)
    try:
        with contextlib.ExitStack() as stack:
            made = Deployment(root, moto_endpoint, capsys, tick, image_install)
            made.start(stack)
            made.install()
            made.watch(stack)
            yield made
    finally:
        shutil.rmtree(root, ignore_errors=True)


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
    rbac_holds(deployment)
    rules = deployment.prometheus.query_rules()
    assert len(rules) == len(ALERTS) and all(r["health"] == "ok" for r in rules), rules
    ok = deployment.prometheus.wait_for("dr_backup_success == 1", lambda found: len(found) == 4)
    assert sorted(dict(k)["source"] for k in ok) == ["cluster", "code", "config", "etcd"]
    assert day.alerts == {} and deployment.prometheus.firing() == set()
