"""Part sizes chosen per file (issue 16): one PUT up to a threshold, larger parts for larger files.

The choice itself is a pure function of the file's size and the memory budget; that a copy cut
either way verifies and restores is checked against two real moto servers (the copy is streamed
across endpoints), with a budget small enough that a 5 MiB shard goes as one PUT and a 20 MiB
shard in parts: the target's ETags say which (a multipart object's ends in -<parts>).
"""

from __future__ import annotations

import warnings

import pytest

from dr.exporters.checkpoints.options import CheckpointsOptions
from dr.kits.places.parts import MAX_PARTS, part_size_for
from tests.checkpoints.test_exporter_helpers import upload_tree
from tests.cli.planfiles import local_target, write_plan
from tests.faults.running import backup_verify_restore
from tests.fixtures_s3 import s3_client

MiB, GiB = 1 << 20, 1 << 30


@pytest.mark.parametrize("size, budget, part", [
    (0, 128 * MiB, 1), (10 * MiB, 128 * MiB, 10 * MiB), (64 * MiB, 128 * MiB, 64 * MiB),  # one PUT
    (64 * MiB + 1, 128 * MiB, 16 * MiB), (256 * MiB, 128 * MiB, 16 * MiB), (GiB, 128 * MiB, 16 * MiB),
    (GiB, 512 * MiB, 16 * MiB),  # a larger budget: more parts in flight, not larger ones
    (200 * MiB, 512 * MiB, 16 * MiB),  # one PUT stops at SINGLE_PUT_MAX (96 MiB) whatever the budget
    (20 * MiB, 16 * MiB, 16 * MiB), (5 * MiB, 16 * MiB, 5 * MiB),  # a small budget halves the threshold
])
def test_the_part_size_follows_the_file_size(size, budget, part):
    assert part_size_for(size, budget) == part


def test_at_the_default_budget_a_64_mib_dcp_shard_is_one_put_two_at_a_time():
    """A "64 MB" DCP shard is 64 MiB of tensors plus its header: one PUT (a multipart upload
    costs the server more), and two fit the default budget at once."""
    budget = CheckpointsOptions.model_fields["max_buffer_mib"].default * MiB
    shard = 64 * MiB + 16 * 1024
    assert part_size_for(shard, budget) == shard
    assert 2 * shard <= budget
    assert part_size_for(budget // 2 + 1, budget) == 16 * MiB


def test_parts_stay_within_s3s_count_and_a_fixed_size_is_kept():
    huge = 5 << 40  # 5 TiB, S3's largest object
    assert -(-huge // part_size_for(huge, 128 * MiB)) <= MAX_PARTS
    assert part_size_for(GiB, 128 * MiB, fixed=5 * MiB) == 5 * MiB
    assert part_size_for(64 * MiB, 128 * MiB, fixed=16 * MiB) == 16 * MiB  # fixed: no single PUT


def _checkpoint(root) -> dict[str, int]:
    """A real DCP save whose two shards fall either side of the threshold (5 MiB and 20 MiB)."""
    import torch
    import torch.distributed.checkpoint as dcp

    step = root / "llama" / "step-1"
    state = {"small": torch.rand((5 * MiB) // 4), "large": torch.rand((20 * MiB) // 4)}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dcp.save(state, storage_writer=dcp.FileSystemWriter(str(step), thread_count=2))
    return {p.name: p.stat().st_size for p in step.iterdir()}


def test_copies_above_and_below_the_threshold_verify_and_restore(tmp_path, s3_bucket, moto_endpoint,
                                                                 moto_endpoint_b, capsys):
    sizes = _checkpoint(tmp_path / "local")
    assert sorted(sizes.values())[1] < 8 * MiB < 16 * MiB < max(sizes.values())
    src, dst = s3_bucket(), s3_bucket(endpoint=moto_endpoint_b)
    upload_tree(moto_endpoint, src, "runs", tmp_path / "local")
    source = (f'  - name: training\n    type: checkpoints\n    settle_seconds: 0\n    max_buffer_mib: 16\n'
              f'    roots: [{{url: "s3://{src}/runs", endpoint_url: "{moto_endpoint}"}}]\n'
              f'    dr_copy: {{url: "s3://{dst}/dr", endpoint_url: "{moto_endpoint_b}"}}\n')
    plan = write_plan(tmp_path / "plan.yaml", local_target(tmp_path / "repo"), source)
    backup_verify_restore(capsys, plan, "training", str(tmp_path / "back"))
    client = s3_client(moto_endpoint_b)
    etags = {o["Key"].rsplit("/", 1)[-1]: o["ETag"].strip('"')
             for o in client.list_objects_v2(Bucket=dst, Prefix="dr/")["Contents"]}
    parts = {name: etags[name].partition("-")[2] for name in sizes}
    assert parts == {name: ("2" if size > 16 * MiB else "") for name, size in sizes.items()}, etags
    step = tmp_path / "local" / "llama" / "step-1"
    for name in sizes:
        assert (tmp_path / "back" / "llama" / "step-1" / name).read_bytes() == (step / name).read_bytes()
