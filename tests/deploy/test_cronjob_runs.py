"""The rendered CronJobs' commands run: plans/multi-region.yaml, its data and remotes made local
and its targets pointed at a moto S3 server, rendered with a real Pushgateway; then each
CronJob's container argv is run as a process (two of the four backups, to keep the test short:
the git one, which reads three remotes, and the secret one, encrypted to the remote object-locked
target only; then the remote target's prune, verify, status and audit), with the plan path
substituted by the ConfigMap's plan written to a file and the environment the container would
get (its values, and its Secret references resolved from a Secret the test makes). Every backup
must succeed and leave a snapshot of its sources, each maintenance job end with its expected
code, and every job's metrics reach the Pushgateway."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
import uuid

import yaml

from dr.cli.main import main
from tests.deploy.conftest import MULTI_REGION, by_kind, container, documents, render
from tests.fixtures_s3 import s3_client

# The Secret the operator creates (docs/deploy.md), with moto's fake keys.
SECRET = {"aws-access-key-id": "testing", "aws-secret-access-key": "testing", "pushgateway-password": ""}
RUN = {"dr-backup-platform-declarations", "dr-backup-platform-secrets"}
# The remote target's maintenance, in the order a day runs it, and the code each must end with:
# two of the plan's four sources are not backed up here, so status ends 7 (their RPO is breached)
# and the audit 4 (stale-backup blockers: nothing to restore them from).
MAINTENANCE = {"dr-prune-dr-remote": 0, "dr-verify-dr-remote": 0, "dr-status-dr-remote": 7, "dr-audit-dr-remote": 4}
# What each command publishes that the alerts' staleness rules read
REPORTED = ("dr_backup_last_success_timestamp_seconds", "dr_prune_last_success_timestamp_seconds",
            "dr_verify_last_run_timestamp_seconds", "dr_status_last_run_timestamp_seconds",
            "dr_audit_last_run_timestamp_seconds")


def _git_repo(path) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@x", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@x"}
    subprocess.run(["git", "init", "-q", str(path)], check=True, env=env)
    (path / "README").write_text(path.name)
    subprocess.run(["git", "-C", str(path), "add", "README"], check=True, env=env)
    subprocess.run(["git", "-C", str(path), "commit", "-qm", "first"], check=True, env=env)
    return str(path)


def _local_plan(tmp_path, moto_endpoint: str) -> str:
    """multi-region.yaml with its targets on moto and its paths and remotes in tmp_path."""
    plan = yaml.safe_load(open(MULTI_REGION, encoding="utf-8"))
    for target in plan["targets"]:
        bucket = f"dr-deploy-{uuid.uuid4().hex[:16]}"
        extra = {"ObjectLockEnabledForBucket": True} if target.get("immutability") else {}
        s3_client(moto_endpoint).create_bucket(Bucket=bucket, **extra)
        target.update(url=f"s3://{bucket}/ml-multi-region", endpoint_url=moto_endpoint, region="us-east-1")
    for source in plan["sources"]:
        for repo in source.get("repositories", []):
            repo["url"] = _git_repo(tmp_path / "remotes" / repo["name"])
        if "paths" in source:
            source["paths"] = [str(tmp_path / p.lstrip("/")) for p in source["paths"]]
            for path in source["paths"]:
                os.makedirs(path)
                open(os.path.join(path, "settings.yaml"), "w").write(f"{source['name']}: {path}\n")
    path = tmp_path / "multi-region-local.yaml"
    path.write_text(yaml.safe_dump(plan, sort_keys=False))
    return str(path)


def _environment(pod_container: dict, home: str) -> dict:
    env = {"PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"],
           # the developer's AWS files are never read (tests/fixtures_s3.py)
           "AWS_CONFIG_FILE": os.devnull, "AWS_SHARED_CREDENTIALS_FILE": os.devnull, "AWS_EC2_METADATA_DISABLED": "true"}
    for entry in pod_container["env"]:
        if "value" in entry:
            env[entry["name"]] = home if entry["value"] == "/tmp" else entry["value"]
        else:
            env[entry["name"]] = SECRET[entry["valueFrom"]["secretKeyRef"]["key"]]
    return env


def _run(cron: dict, mounted, home) -> subprocess.CompletedProcess:
    pod = container(cron)
    argv = [str(mounted) if a == "/etc/dr/plan.yaml" else a for a in pod["command"]]
    assert argv.count(str(mounted)) == 1 and argv[0] == "dr"
    return subprocess.run(argv, env=_environment(pod, str(home)), capture_output=True, text=True, timeout=180)


def test_each_rendered_cronjob_command_runs(tmp_path, aws_env, moto_endpoint, pushgateway, capsys):
    plan = _local_plan(tmp_path, moto_endpoint)
    code, out, err = render(["--plan", plan, "--pushgateway", pushgateway], capsys)
    assert code == 0, err
    docs = documents(out)
    mounted = tmp_path / "etc-dr" / "plan.yaml"  # where the ConfigMap would be mounted
    mounted.parent.mkdir()
    mounted.write_text(by_kind(docs, "ConfigMap")[0]["data"]["plan.yaml"])
    cronjobs = {c["metadata"]["name"]: c for c in by_kind(docs, "CronJob")}
    assert len(cronjobs) == 4 + 4 * 2  # a backup per schedule; prune, verify, status, audit per target
    home = tmp_path / "home"
    home.mkdir()
    for name in sorted(RUN) + list(MAINTENANCE):
        done = _run(cronjobs[name], mounted, home)
        assert done.returncode == MAINTENANCE.get(name, 0), f"{name}: {done.stderr}{done.stdout[-3000:]}"
        assert "warning: metrics not pushed" not in done.stderr, done.stderr
    # each source that ran has a snapshot on the remote target (the default one)
    assert main(["snapshots", "--plan", str(mounted), "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    results = [s for snap in listed["snapshots"] for s in snap["sources"]]
    assert {s["name"] for s in results} == {"platform-declarations", "platform-secrets"}
    assert all(s["artifacts"] > 0 and "error" not in s for s in results)
    with urllib.request.build_opener(urllib.request.ProxyHandler({})).open(f"{pushgateway}/metrics") as response:
        exposed = [line for line in response.read().decode().splitlines() if 'plan="ml-multi-region"' in line]
    for metric in REPORTED:
        assert any(line.startswith(metric + "{") for line in exposed), metric
