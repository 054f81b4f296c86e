"""A kubernetes source backed up to S3 and restored through the fault proxy at 10% faults (issue 16).

The emulated clusters are not faulted (their own faults are tested in test_listing_faults.py):
the repository's S3 is, behind tests/harness/faultproxy.py in front of moto.
"""

from __future__ import annotations

from dr.repository.encryption import generate_identity
from tests.cli.planfiles import s3_target, write_plan
from tests.faults.running import backup_verify_restore
from tests.kubernetes.test_cli import SOURCE


def test_kubernetes_backup_verify_restore_through_faults(tmp_path, kubeconfig, dest, s3_bucket, moto_endpoint,
                                                         fault_proxy, capsys):
    identity, recipient = generate_identity()
    (tmp_path / "identity.txt").write_text(identity + "\n")
    proxy = fault_proxy(moto_endpoint, rate=0.1, seed=5)
    plan = write_plan(tmp_path / "plan.yaml", s3_target(s3_bucket(region="eu-west-1"), proxy.url), SOURCE,
                      [recipient])
    restored = backup_verify_restore(capsys, plan, "cluster", f"{kubeconfig}:dest",
                                     "--identity", str(tmp_path / "identity.txt"))
    assert restored["counts"]["restored"] > 0, restored
    assert dest.get_object("v1", "Secret", "db", "team-a") is not None
    assert proxy.injected >= 3 and proxy.counts["proxy_errors"] == 0, proxy.counts
