"""Backups, verifies and restores through a fault-injecting proxy in front of real moto servers.

Issue 16: at 10% faults (503 SlowDown with S3's XML body, connection resets part-way through a
request or an answer, slow answers; tests/harness/faultproxy.py) every run must complete, verify
clean, and restore what was backed up, byte for byte, with no traceback on stderr. Each test
asserts that faults were really injected, so a proxy that stopped injecting cannot pass for a
robust dr. The RNG is seeded; data is small, so the suite stays quick.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from tests.checkpoints.test_exporter_helpers import bucket_files, save_steps, upload_tree
from tests.cli.planfiles import files_source, s3_target, write_plan
from tests.faults.running import backup_verify_restore, run_ok

RATE = 0.1


def _tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _files(root: Path, rng: random.Random) -> Path:
    """Thirty small files and one of 9 MiB (two of the files exporter's 8 MiB chunks)."""
    data = root / "data"
    for i in range(30):
        (data / f"d{i % 3}").mkdir(parents=True, exist_ok=True)
        (data / f"d{i % 3}" / f"f{i}.bin").write_bytes(rng.randbytes(rng.randrange(0, 200_000)))
    (data / "big.bin").write_bytes(rng.randbytes(9 << 20))
    return data


@pytest.mark.parametrize("seed", [1])
def test_files_backup_verify_restore_at_ten_percent_faults(tmp_path, s3_bucket, moto_endpoint, fault_proxy,
                                                           capsys, seed):
    rng = random.Random(seed)
    proxy = fault_proxy(moto_endpoint, rate=RATE, seed=seed)
    data = _files(tmp_path, rng)
    plan = write_plan(tmp_path / "plan.yaml", s3_target(s3_bucket(region="eu-west-1"), proxy.url),
                      files_source("config", [data]))
    run_ok(capsys, "backup", "--plan", plan)
    (data / "d0" / "f0.bin").write_bytes(rng.randbytes(50_000))  # a second snapshot, partly new
    out = tmp_path / "restored"
    backup_verify_restore(capsys, plan, "config", str(out))
    assert _tree(out / "data") == _tree(data)
    assert proxy.injected >= 5, proxy.counts
    assert proxy.counts["proxy_errors"] == 0, proxy.counts


CHECKPOINTS = """  - name: training
    type: checkpoints
    roots: [{{url: "s3://{src}/runs", endpoint_url: "{src_endpoint}"}}]
    dr_copy: {{url: "s3://{dst}/dr", endpoint_url: "{dst_endpoint}"}}
    settle_seconds: 0
"""


def test_checkpoint_copies_across_endpoints_at_ten_percent_faults(tmp_path, s3_bucket, moto_endpoint,
                                                                  moto_endpoint_b, fault_proxy, capsys):
    local = tmp_path / "local"
    save_steps(local, "llama", [100, 200], single_file_per_rank=False)
    src, dst = s3_bucket(), s3_bucket(endpoint=moto_endpoint_b)
    upload_tree(moto_endpoint, src, "runs", local)
    a, b = fault_proxy(moto_endpoint, rate=RATE, seed=3), fault_proxy(moto_endpoint_b, rate=RATE, seed=4)
    source = CHECKPOINTS.format(src=src, src_endpoint=a.url, dst=dst, dst_endpoint=b.url)
    plan = write_plan(tmp_path / "plan.yaml", s3_target(s3_bucket(endpoint=moto_endpoint_b), b.url), source)
    out = tmp_path / "restored"
    backup_verify_restore(capsys, plan, "training", str(out))
    assert _tree(out / "llama" / "step-200") == _tree(local / "llama" / "step-200")
    back = s3_bucket()  # the older step back to a bucket on the first endpoint, streamed through both proxies
    run_ok(capsys, "restore", "--plan", plan, "--source", "training", "--to", f"s3://{back}/resume",
           "--remap", "run=llama", "--remap", "step=100", "--remap", f"endpoint_url={a.url}")
    assert bucket_files(moto_endpoint, back, "resume/llama/step-100") == \
        bucket_files(moto_endpoint, src, "runs/llama/step-100")
    assert a.injected + b.injected >= 5, (a.counts, b.counts)
    assert a.counts["proxy_errors"] == b.counts["proxy_errors"] == 0
