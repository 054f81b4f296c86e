"""One rank of a real multi-process DCP save (gloo on loopback, CPU only).

Run as: python multirank_writer.py RANK WORLD STORE_FILE OUT_DIR
Each rank joins a gloo process group through a FileStore (no TCP port to pick), trains its
own small model, then saves three times:
  OUT_DIR/collective       the coordinator writes one global `.metadata`, each rank its
                           `__<rank>_0.distcp`
  OUT_DIR/rank_local       use_collectives=False: each rank also writes `__<rank>.metadata`
  OUT_DIR/rank_local_died  the same, but the last rank is killed (os._exit(17)) first, as a
                           preempted node would be; the others then fail at the final barrier
"""

from __future__ import annotations

import os
import sys
import warnings

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
import torch.nn as nn


def main() -> None:
    warnings.simplefilter("ignore")
    rank, world, store, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
    dist.init_process_group("gloo", init_method=f"file://{store}", rank=rank, world_size=world)
    torch.manual_seed(rank)
    model = nn.Linear(6, 3 + rank)
    opt = torch.optim.Adam(model.parameters())
    model(torch.randn(4, 6)).sum().backward()
    opt.step()
    # Distinct keys per rank, so every rank really writes a shard of its own.
    state = {f"rank{rank}": {"model": model.state_dict(), "optim": opt.state_dict()}}
    dcp.save(state, checkpoint_id=os.path.join(out, "collective"))
    dcp.save(state, checkpoint_id=os.path.join(out, "rank_local"), use_collectives=False)
    dist.barrier()
    if rank == world - 1:
        os._exit(17)
    dcp.save(state, checkpoint_id=os.path.join(out, "rank_local_died"), use_collectives=False)


if __name__ == "__main__":
    main()
