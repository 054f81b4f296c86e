"""A plain PyTorch training loop that speaks dr's progress protocol and saves its full training
state with PyTorch Distributed Checkpoint (DCP), so that `dr drill --training` can resume it at
another world size and check that it continued (docs/readiness.md, "Training recovery drills").

Run it with torchrun (gloo on CPU; `--device cuda` for NCCL, one GPU a rank):

    torchrun --nproc-per-node 2 plain_pytorch.py --root /ckpt/run-a --steps 100 --save-every 10
    torchrun --nproc-per-node 3 plain_pytorch.py --root /ckpt/run-a --steps 100 --resume /ckpt/run-a/step-20

What makes it resumable, at any world size:
- the whole state goes into one DCP save: model and optimizer through
  torch.distributed.checkpoint.state_dict (get_state_dict / set_state_dict: the optimizer state is
  laid out by parameter name, so it reshards), the LR scheduler, the step, the data position and
  the RNG states;
- the data order does not depend on the world size: each epoch is one seeded permutation of the
  dataset, a step takes the next `--global-batch` samples of it, and each rank takes its slice
  of those; so resuming at a position continues the same sequence of batches;
- gradients are summed over ranks and divided by the global batch, so a step computes the same
  update whatever the world size (up to the order of float additions).
`--without PART` leaves a part out of the saves (to see a drill catch it); loading restores
whatever parts the checkpoint holds and starts the rest fresh, as a forgiving trainer does.
`--step-seconds` adds work per step (a stand-in for a real model's compute).
"""

from __future__ import annotations

import argparse
import os
import time

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict

from dr.training.progress import Progress

SAMPLES, FEATURES = 240, 16
PARTS = ("model", "optimizer", "lr_scheduler", "step", "dataloader", "rng")


def main() -> None:
    args = _arguments()
    device = torch.device("cpu")
    if args.device == "cuda":  # NCCL, one GPU per process (torchrun's LOCAL_RANK)
        device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
        torch.cuda.set_device(device)
    _init_group("nccl" if args.device == "cuda" else "gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    progress = Progress(rank=rank)
    progress.group_ready(world_size=world)
    torch.manual_seed(0)
    data_x = torch.randn(SAMPLES, FEATURES)
    data_y = data_x @ torch.randn(FEATURES, 1) + 0.1 * torch.randn(SAMPLES, 1)
    data_x, data_y = data_x.to(device), data_y.to(device)
    model = torch.nn.Linear(FEATURES, 1).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=0.05)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: min(1.0, (s + 1) / 10) * 0.95 ** (s // 10))
    position = {"epoch": 0, "offset": 0}
    step = 0
    if args.resume:
        step = _load(args.resume, model, optimizer, scheduler, position)
        progress.loaded(step)
    while step < args.steps:
        ids = _batch(position, args.global_batch)
        mine = ids[rank::world]
        optimizer.zero_grad()
        error = (model(data_x[mine]) - data_y[mine]).pow(2).sum()
        (error / args.global_batch).backward()
        for parameter in model.parameters():  # the global batch's mean gradient, at any world size
            dist.all_reduce(parameter.grad)
        total = error.detach().clone()
        dist.all_reduce(total)
        lr = scheduler.get_last_lr()[0]
        optimizer.step()
        scheduler.step()
        step += 1
        time.sleep(args.step_seconds)
        progress.step(step, samples=step * args.global_batch, loss=float(total) / args.global_batch, lr=lr,
                      sample_ids=ids, epoch=position["epoch"])
        if args.save_every and step % args.save_every == 0:
            _save(f"{args.root}/step-{step}", model, optimizer, scheduler, position, step, args.without)
            progress.saved(step)
        if step == args.fail_at:
            os._exit(17)  # the failure: no clean-up, no save, as a lost node
    progress.close()
    dist.destroy_process_group()


def _init_group(backend: str) -> None:
    """The process group, in a store namespace of its own for each restart: torchrun keeps one
    store across restarts, and the restarted workers must not read the addresses the killed
    ones published there (they would connect to dead ports)."""
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    hosted = os.environ.get("TORCHELASTIC_USE_AGENT_STORE") == "True"  # torchrun's agent serves it
    store = dist.TCPStore(os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]), world,
                          is_master=not hosted and rank == 0)
    attempt = os.environ.get("TORCHELASTIC_RESTART_COUNT", "0")
    dist.init_process_group(backend, store=dist.PrefixStore(f"attempt-{attempt}", store), rank=rank,
                            world_size=world)


def _arguments() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--root", required=True, help="the run's checkpoint folder (saves go to ROOT/step-N)")
    p.add_argument("--steps", type=int, required=True, help="train until this step")
    p.add_argument("--save-every", type=int, default=0, help="save every N steps (0: never)")
    p.add_argument("--resume", help="a DCP checkpoint folder to resume from")
    p.add_argument("--global-batch", type=int, default=6, help="samples per step over all ranks")
    p.add_argument("--fail-at", type=int, default=0, help="exit abruptly after this step (a failure)")
    p.add_argument("--without", action="append", default=[], choices=PARTS, help="leave this part out of saves")
    p.add_argument("--step-seconds", type=float, default=0.0, help="extra seconds of work per step")
    p.add_argument("--device", choices=["cpu", "cuda"], default="cpu", help="cpu (gloo) or cuda (NCCL, a GPU a rank)")
    return p.parse_args()


def _batch(position: dict, size: int) -> list[int]:
    """The next `size` sample ids of this epoch's permutation (a new epoch when it runs out)."""
    ids: list[int] = []
    while len(ids) < size:
        order = torch.randperm(SAMPLES, generator=torch.Generator().manual_seed(1000 + position["epoch"])).tolist()
        taken = order[position["offset"]:position["offset"] + size - len(ids)]
        ids += taken
        position["offset"] += len(taken)
        if position["offset"] >= SAMPLES:
            position["epoch"], position["offset"] = position["epoch"] + 1, 0
    return ids


def _state(model, optimizer, scheduler, position: dict, step: int) -> dict:
    model_state, optimizer_state = get_state_dict(model, optimizer)
    return {"model": model_state, "optimizer": optimizer_state, "lr_scheduler": scheduler.state_dict(),
            "step": step, "dataloader": dict(position), "rng": {"torch": torch.get_rng_state()}}


def _save(path: str, model, optimizer, scheduler, position: dict, step: int, without: list[str]) -> None:
    state = _state(model, optimizer, scheduler, position, step)
    dcp.save({k: v for k, v in state.items() if k not in without}, checkpoint_id=path)


def _load(path: str, model, optimizer, scheduler, position: dict) -> int:
    held = {key.split(".", 1)[0] for key in dcp.FileSystemReader(path).read_metadata().state_dict_metadata}
    state = {k: v for k, v in _state(model, optimizer, scheduler, position, 0).items() if k in held}
    dcp.load(state, checkpoint_id=path)
    set_state_dict(model, optimizer, model_state_dict=state.get("model", model.state_dict()),
                   optim_state_dict=state.get("optimizer", get_state_dict(model, optimizer)[1]))
    if "lr_scheduler" in state:
        scheduler.load_state_dict(state["lr_scheduler"])
    if "dataloader" in state:
        position.update(state["dataloader"])
    if "rng" in state:
        torch.set_rng_state(state["rng"]["torch"])
    return int(state.get("step", 0))


if __name__ == "__main__":
    main()
