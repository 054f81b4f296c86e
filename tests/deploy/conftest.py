"""Rendering plans through the real `dr deploy render` entry point, and reading the objects back."""

from __future__ import annotations

import json
import os

import pytest
import yaml

from dr.cli.main import main
from tests.metrics.conftest import pushgateway  # noqa: F401  (a fixture: the rendered jobs push there)
from tests.plans.conftest import REPO_ROOT

MULTI_REGION = os.path.join(REPO_ROOT, "plans", "multi-region.yaml")
RECIPIENT = "age1js0yuyze0c52ch9fy3wnlrntvkxwhw4llvtpe6w4twrf9839pgssr48axk"


def two_region_plan(name: str) -> str:
    """A plan's head up to `sources:`: two regions, region-a protected against, an S3 target in region-b."""
    return (f"version: 1\nname: {name}\nfailure_domains:\n"
            "  - {name: cloud, kind: provider, children: [{name: region-a, kind: region}, {name: region-b, kind: region}]}\n"
            f"protects_against: [region-a]\nencryption: {{recipients: [{RECIPIENT}]}}\ntargets:\n"
            f'  - {{name: dr, url: "s3://backups/{name}", domain: region-b, region: eu-west-1}}\n'
            "dr_image: registry.region-b.example.com/dr:1.2\nsources:\n")

# A plan with every kind of need: a kubernetes source limited to two namespaces, one reading
# every group, a Vault at an IP, a target behind an in-cluster service, a source with no schedule.
WIDE_PLAN = f"""\
version: 1
name: wide
failure_domains:
  - {{name: cloud, kind: provider, children: [{{name: region-a, kind: region, children: [{{name: cluster-a, kind: cluster}}]}}, {{name: region-b, kind: region}}]}}
protects_against: [cluster-a]
encryption: {{recipients: [{RECIPIENT}]}}
targets:
  - {{name: minio, url: "s3://backups/wide", domain: region-b, endpoint_url: "http://minio.storage.svc.cluster.local:9000"}}
dr_image: registry.region-b.example.com/dr:1.2
sources:
  - name: team-objects
    type: kubernetes
    schedule: "0 * * * *"
    rpo: 1h
    namespaces: [team-b, team-a]
    include_groups: [kueue.x-k8s.io]
    workload_kinds: [Deployment, Service, networkpolicies.networking.k8s.io]
  - name: cluster-objects
    type: kubernetes
    schedule: "0 * * * *"
    rpo: 1h
  - name: vault
    type: vault
    schedule: "*/30 * * * *"
    rpo: 30m
    address: https://10.20.30.40:8200
    auth: {{method: token, token_file: /var/run/secrets/dr/vault-token}}
    unseal: {{type: shamir, custodians: [alice, bob], threshold: 2}}
  - name: config
    type: files
    paths: [/srv/config]
"""


def render(args: list[str], capsys) -> tuple[int, str, str]:
    code = main(["deploy", "render", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def documents(text: str) -> list[dict]:
    return [d for d in yaml.safe_load_all(text) if d]


def by_kind(docs: list[dict], kind: str) -> list[dict]:
    return [d for d in docs if d["kind"] == kind]


def backups(docs: list[dict]) -> list[dict]:
    """The backup CronJobs (not prune, verify, status and audit)."""
    return [d for d in by_kind(docs, "CronJob") if d["metadata"]["labels"]["app.kubernetes.io/component"] == "backup"]


def container(cronjob: dict) -> dict:
    (found,) = cronjob["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"]
    return found


@pytest.fixture
def wide_plan(tmp_path) -> str:
    path = tmp_path / "wide.yaml"
    path.write_text(WIDE_PLAN, encoding="utf-8")
    return str(path)


@pytest.fixture
def rendered_json(capsys):
    def run(*args: str) -> dict:
        code, out, err = render([*args, "--json"], capsys)
        assert code == 0, err
        return json.loads(out)
    return run
