"""What each built-in exporter says it needs in a pod (contract v2 run_needs), as the renderer
uses it; and a source whose exporter says nothing is named, never silently left bare."""

from __future__ import annotations

from importlib.metadata import EntryPoint, entry_points

import pytest

from dr.deploy.rendering import render
from dr.contract.capabilities import overrides
from dr.exporters.etcd import EtcdExporter
from dr.contract.registry import GROUP, Registry
from dr.model.plan_loading import load_plan
from tests.deploy.conftest import backups, by_kind, container, documents, two_region_plan

PLAN = two_region_plan("needs") + """\
  - name: images
    type: images
    schedule: "0 * * * *"
    to: ["https://dr-registry.example.com/mirror"]
    images: ["ghcr.io/acme/train:1", "busybox:1"]
    pull_secrets: [team-a/pull]
    auth_file: auth.json
  - name: ckpt
    type: checkpoints
    schedule: "0 * * * *"
    roots: [{url: "s3://ckpt/runs", endpoint_url: "http://10.1.2.3:9000"}]
    dr_copy: /data/dr-copies
  - name: secrets
    type: secretsmanager
    schedule: "0 * * * *"
    region: eu-west-1
  - name: vault
    type: vault
    schedule: "0 * * * *"
    address: http://vault.vault.svc:8200
    auth: {method: kubernetes, role: dr-backup}
    unseal: {type: shamir, custodians: [alice], threshold: 1}
  - name: etcd
    type: etcd
    schedule: "0 * * * *"
    clusters: [{name: main, endpoints: ["https://10.0.0.9:2379"], ca_file: tls/ca.pem, cert_file: tls/client.pem,
                key_file: /etc/etcd/client.key}]
  - name: dns
    type: dns
    schedule: "0 * * * *"
    zones:
      - {zone: example.com, axfr: {server: 10.0.0.53, tsig: {name: xfr-key, secret_env: DNS_TSIG}}}
      - {zone: example.org, axfr: {server: 10.0.0.53, port: 5353, tsig: {name: other., secret_file: tsig.b64}}}
      - {zone: example.net, route53: {}}
  - name: models
    type: mlflow
    schedule: "0 * * * *"
    tracking_uri: http://mlflow.ml.svc:5000
    copy_artifacts: true
    copy_to: s3://dr-weights/models
    s3_endpoint_url: http://10.1.2.4:9000
    copy_s3_endpoint_url: https://s3.eu-west-1.amazonaws.com
"""


def test_each_exporters_needs_reach_the_objects(tmp_path, rendered_json):
    path = tmp_path / "needs.yaml"
    path.write_text(PLAN)
    report = rendered_json("--plan", str(path))
    docs = documents(report["manifest"])
    notes = "\n".join(report["notes"])
    # images: DR registry and source registries (Docker Hub by its API host), pull secret read in
    # its namespace, the auth file from the Secret; images from other sources named as unknowable
    assert {"dr-registry.example.com:443", "ghcr.io:443", "registry-1.docker.io:443"} <= set(report["public_endpoints"])
    assert "known only when the backup runs" in notes
    binding, = by_kind(docs, "RoleBinding")
    assert binding["metadata"]["namespace"] == "team-a"
    # a relative auth_file resolves into the plan's read-only mount: said, with the fix
    assert "source images: /etc/dr/auth.json resolves inside the plan's read-only ConfigMap mount" in notes
    # checkpoints on an S3 endpoint at an IP: an ipBlock of it; AWS keys from the Secret
    egress = by_kind(docs, "NetworkPolicy")[0]["spec"]["egress"]
    assert {"to": [{"ipBlock": {"cidr": "10.1.2.3/32"}}], "ports": [{"protocol": "TCP", "port": 9000}]} in egress
    assert "secretsmanager.eu-west-1.amazonaws.com:443" in report["public_endpoints"]
    # a DR copy into a directory is written: not mounted read-only, said instead
    assert "DR copies are written to the directory /data/dr-copies: mount a writable volume" in notes
    assert report["volume_claims"] == []
    # vault in the cluster, kubernetes login: its namespace, and the token mounted
    vault_ns = {"to": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "vault"}}}],
                "ports": [{"protocol": "TCP", "port": 8200}]}
    assert vault_ns in egress
    assert by_kind(docs, "ServiceAccount")[0]["automountServiceAccountToken"] is True
    # etcd: its member's IP, and the client TLS files mounted at the plan's paths (relative: the plan's mount)
    assert {"to": [{"ipBlock": {"cidr": "10.0.0.9/32"}}], "ports": [{"protocol": "TCP", "port": 2379}]} in egress
    mounts = {m["mountPath"] for m in container(cron_of(docs))["volumeMounts"]}
    assert {"/etc/dr/tls/ca.pem", "/etc/dr/tls/client.pem", "/etc/etcd/client.key"} <= mounts
    keys = {k["key"] for k in report["secret"]["keys"]}
    assert {"etcd-ca-etcd-main", "etcd-cert-etcd-main", "etcd-key-etcd-main"} <= keys
    # dns: the AXFR server on each port it is asked on (TCP), a TSIG secret from an env var and
    # one from a file, Route53 with the AWS keys
    assert {"to": [{"ipBlock": {"cidr": "10.0.0.53/32"}}],
            "ports": [{"protocol": "TCP", "port": 53}, {"protocol": "TCP", "port": 5353}]} in egress
    env = {e["name"]: e for e in container(cron_of(docs))["env"]}
    assert env["DNS_TSIG"]["valueFrom"]["secretKeyRef"]["key"] == "dns-tsig-dns-xfr-key"
    assert "/etc/dr/tsig.b64" in mounts and "dns-tsig-dns-other" in keys
    assert "route53.amazonaws.com:443" in report["public_endpoints"]
    # mlflow: the tracking server's namespace, its optional login, the S3 endpoints weights are
    # read from and copied to
    assert {"to": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "ml"}}}],
            "ports": [{"protocol": "TCP", "port": 5000}]} in egress
    assert env["MLFLOW_TRACKING_TOKEN"]["valueFrom"]["secretKeyRef"]["optional"] is True
    assert {"to": [{"ipBlock": {"cidr": "10.1.2.4/32"}}], "ports": [{"protocol": "TCP", "port": 9000}]} in egress
    assert "s3.eu-west-1.amazonaws.com:443" in report["public_endpoints"]
    assert "weights are read from where each version's source points" in notes
    # every source answered; the one CronJob (one schedule) reads the AWS keys once each
    assert report["uncovered"] == []
    names = [e["name"] for e in container(cron_of(docs))["env"]]
    assert names.count("AWS_ACCESS_KEY_ID") == 1


def cron_of(docs: list[dict]) -> dict:
    cron, = backups(docs)
    return cron


@pytest.mark.parametrize("name", Registry().names())
def test_every_builtin_exporter_answers_run_needs(name):
    assert overrides(Registry().get(name), "run_needs"), f"{name} does not say what it needs in a pod"


class SilentEtcd(EtcdExporter):
    """A third-party exporter as dr may meet one: it does not answer run_needs."""

    def run_needs(self):
        return None


def test_a_source_whose_exporter_does_not_answer_is_named(tmp_path):
    path = tmp_path / "needs.yaml"
    path.write_text(PLAN)
    eps = [ep for ep in entry_points(group=GROUP) if ep.name != "etcd"]
    registry = Registry(eps + [EntryPoint("etcd", f"{__name__}:SilentEtcd", GROUP)])
    rendering = render(load_plan(str(path), registry), registry, PLAN)
    assert rendering.uncovered == ["etcd"]
    assert "source etcd (etcd): its exporter does not say what it needs in a pod" in "\n".join(rendering.notes)
    egress = by_kind([d.obj for d in rendering.docs], "NetworkPolicy")[0]["spec"]["egress"]
    assert not any(rule.get("to", [{}])[0].get("ipBlock", {}).get("cidr") == "10.0.0.9/32" for rule in egress)
