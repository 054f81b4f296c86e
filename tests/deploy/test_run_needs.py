"""What each built-in exporter says it needs in a pod (contract v2 run_needs), as the renderer
uses it; and a source whose exporter says nothing is named, never silently left bare."""

from __future__ import annotations

from tests.deploy.conftest import RECIPIENT, by_kind, container, documents

PLAN = f"""\
version: 1
name: needs
failure_domains:
  - {{name: cloud, kind: provider, children: [{{name: region-a, kind: region}}, {{name: region-b, kind: region}}]}}
protects_against: [region-a]
encryption: {{recipients: [{RECIPIENT}]}}
targets:
  - {{name: dr, url: "s3://backups/needs", domain: region-b, region: eu-west-1}}
dr_image: registry.region-b.example.com/dr:1.2
sources:
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
    roots: [{{url: "s3://ckpt/runs", endpoint_url: "http://10.1.2.3:9000"}}]
    dr_copy: /data/dr-copies
  - name: secrets
    type: secretsmanager
    schedule: "0 * * * *"
    region: eu-west-1
  - name: vault
    type: vault
    schedule: "0 * * * *"
    address: http://vault.vault.svc:8200
    auth: {{method: kubernetes, role: dr-backup}}
    unseal: {{type: shamir, custodians: [alice], threshold: 1}}
  - name: etcd
    type: etcd
    schedule: "0 * * * *"
    clusters: [{{name: main, endpoints: ["https://10.0.0.9:2379"]}}]
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
    # etcd's exporter does not answer run_needs: named as uncovered, and its endpoint not opened
    assert report["uncovered"] == ["etcd"]
    assert "source etcd (etcd): its exporter does not say what it needs in a pod" in notes
    assert not any(rule.get("to", [{}])[0].get("ipBlock", {}).get("cidr") == "10.0.0.9/32" for rule in egress)
    # the one CronJob (one schedule) reads the AWS keys once each
    cron, = by_kind(docs, "CronJob")
    names = [e["name"] for e in container(cron)["env"]]
    assert names.count("AWS_ACCESS_KEY_ID") == 1
