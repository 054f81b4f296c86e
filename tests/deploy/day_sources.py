"""The day's sources beyond kubernetes, etcd, files and git: one of every other exporter type the
rendered deployment holds (issue 30, point 5), each against a real server started here with the
suite's own helpers, and written into the day's plan.

- vault: a raft OpenBao (tests.openbao, populated as the vault tests' server is), read with its
  root token from `DR_VAULT_TOKEN`, which the pod gets from the Secret key `vault-token-vault`;
- checkpoints: a run of real DCP saves (tests.checkpoints.writers) in a local root, mounted where
  it is like the files source's folder; its DR copies go to the day's moto bucket. It settles
  for 1 s, not the default 30 (the two listings are kept; the 30 s added 34 s to each run);
- images: two CNCF registries (tests.harness.registries), an image pushed to the first and copied
  by each backup to the second;
- dns: a bind9 zone (tests.servers.NamedServer) read by AXFR;
- mlflow: a real MLflow tracking server holding the mlflow tests' registry
  (tests.mlflow.registries), its weights in the day's bucket.

Each runs every 4 or 6 hours, at minutes apart from the other backups: at least four runs in the
day (change detection), twice before the 03:30 prune (retention, `KEEP`), for at most a minute more
of the day's wall time each. No credential here carries a time (no TSIG, no TLS, a root token
without TTL): the Jobs' clocks run a day or two ahead of the servers' (tests.harness.faked_day).
"""

from __future__ import annotations

import contextlib
from pathlib import Path

from tests.checkpoints.writers import Trainer, save_dcp
from tests.fixtures_s3 import s3_client
from tests.harness.registries import DistributionRegistry, push_image, tar_layer
from tests.mlflow.registries import build_registry
from tests.openbao import OpenBao, populate
from tests.servers import NamedServer, mlflow_server

#: source -> (its type, its schedule: every 4 or 6 hours, on quarter-hours no other backup starts
#: at, the hours between its runs); its rpo is twice those
SOURCES = {"vault": ("vault", "15 */4 * * *", 4), "training": ("checkpoints", "45 */6 * * *", 6),
           "images": ("images", "45 1-23/4 * * *", 4), "zone": ("dns", "15 2-23/6 * * *", 6),
           "models": ("mlflow", "15 1-23/6 * * *", 6)}
#: their retention: each has run twice (the install and once in the day) when the 03:30 prune forgets
KEEP = 1
ZONE = "example.test"
RECORDS = ("@ IN SOA ns1 hostmaster 2026010101 3600 600 86400 300\n@ IN NS ns1\nns1 IN A 127.0.0.1\n"
           "www 300 IN A 10.0.0.10\napp 60 IN CNAME www\n")
IMAGE = "team/api:1.0"


class EveryType:
    """The servers, the plan's source entries and the Secret's keys for the five sources."""

    def __init__(self, tmp: Path, moto: str, bucket: str):
        self.tmp, self.moto, self.bucket = tmp, moto, bucket

    def start(self, stack: contextlib.ExitStack) -> None:
        self.vault = stack.enter_context(OpenBao("openbao-day"))
        populate(self.vault)
        self.source = stack.enter_context(DistributionRegistry(name="registry-day-source"))
        self.mirror = stack.enter_context(DistributionRegistry(name="registry-day-dr"))
        push_image(self.source.client(), *IMAGE.split(":"), [tar_layer({"app/api": b"api" * 1000})])
        self.named = stack.enter_context(NamedServer(str(self.tmp / "named"), {ZONE: {"records": RECORDS}}))
        self.mlflow = stack.enter_context(mlflow_server(str(self.tmp / "mlflow")))
        build_registry(self.url(self.mlflow.port), self.bucket, s3=s3_client(self.moto))
        save_dcp(self.tmp / "runs" / "llama" / "step-100", Trainer().state())

    @staticmethod
    def url(port: int) -> str:
        return f"http://127.0.0.1:{port}"

    def secret(self) -> dict[str, str]:
        return {"vault-token-vault": self.vault.root_token}

    def sources(self, rpo) -> str:
        """The plan's entries; rpo(simulated seconds) writes an RPO as the plan's other sources do."""
        options = self._options()
        return "".join(f'  - name: {name}\n    type: {kind}\n    schedule: "{schedule}"\n'
                       f"    rpo: {rpo(2 * hours * 3600)}\n    retention: {{keep_last: {KEEP}}}\n" + options[name]
                       for name, (kind, schedule, hours) in SOURCES.items())

    def _options(self) -> dict[str, str]:
        s3 = f'endpoint_url: "{self.moto}", region: us-east-1'
        return {
            "vault": f'    address: "{self.url(self.vault.server.port)}"\n'
                     "    auth: {method: token, token_env: DR_VAULT_TOKEN}\n"
                     "    unseal: {type: shamir, custodians: [alice, bob, carol], threshold: 2}\n",
            "training": f'    roots: ["{self.tmp}/runs"]\n    settle_seconds: 1\n'
                        f'    dr_copy: {{url: "s3://{self.bucket}/checkpoint-copies", {s3}}}\n',
            "images": f'    to: ["{self.mirror.url}/mirror"]\n'
                      f'    images: ["{self.source.host}/{IMAGE}"]\n    from_plan: false\n',
            "zone": f"    zones: [{{zone: {ZONE}, axfr: {{server: 127.0.0.1, port: {self.named.port}}}}}]\n",
            "models": f'    tracking_uri: "{self.url(self.mlflow.port)}"\n',
        }
