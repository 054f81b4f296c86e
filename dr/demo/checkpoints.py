"""The demo's training runs: real PyTorch DCP checkpoints of a tiny model, and the check that a
restored one loads with tensors equal to what was saved.

run-a saves the full training state (with `--with-training`, run-a is trained for real instead:
the shipped loop, dr.training.examples.plain_pytorch, under torchrun, and it fails after step 25) (model, optimizer, LR scheduler, step, RNG state, data
position and version fields), so its checkpoints are "resumable"; run-b saves the weights alone,
as a careless trainer does, so its are "serves, cannot resume". A tiny model saves in
milliseconds, so the files are then dated as a real run's would be (a save every hour, each
taking 90 s), which gives `dr advise checkpoints` something to measure.

torch is imported lazily: it comes with the `demo` extra; without it the demo skips this part.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import warnings

SAVE_SECONDS, EVERY_SECONDS = 90, 3600


def torch_available() -> bool:
    try:
        import torch.distributed.checkpoint  # noqa: F401
    except ImportError:
        return False
    return True


def save_run(root: str, steps: tuple[int, ...] = (100, 200), full: bool = True) -> dict:
    """Save root/run-a/step-N (full state; not when `full` is False: a trained run-a stands
    there) and root/run-b/step-N (weights) with torch.distributed.checkpoint; return run-a's
    last state."""
    import torch

    torch.manual_seed(0)
    model = torch.nn.Linear(32, 8)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: min(1.0, (step + 1) / 100))
    state: dict = {}
    for n, step in enumerate(steps):
        for _ in range(4):  # a few real training steps, so the optimizer has state
            optimizer.zero_grad()
            model(torch.randn(16, 32)).pow(2).mean().backward()
            optimizer.step()
            scheduler.step()
        state = {"model": {k: v.clone() for k, v in model.state_dict().items()},
                 "optimizer": optimizer.state_dict(), "lr_scheduler": scheduler.state_dict(),
                 "step": step, "rng": {"torch": torch.get_rng_state()},
                 "dataloader": {"epoch": 0, "samples_seen": step * 16},
                 "versions": {"git_sha": "5e1f0c2", "image_digest": "sha256:" + "7d" * 32,
                              "config_hash": "train-cfg-3", "data_version": "corpus-2026-11"}}
        ended = time.time() - (len(steps) - n) * EVERY_SECONDS
        if full:
            _save(state, f"{root}/run-a/step-{step}", ended)
        _save({"model": state["model"]}, f"{root}/run-b/step-{step}", ended)
    return state


TRAINED_SAVES, TRAINED_FAILS_AT = (10, 20), 25


def train_run(root: str, progress_log: str) -> None:
    """run-a trained for real (`dr demo --with-training`): the shipped DCP loop under torchrun at
    world size 2, a save every 10 steps, killed by its failure after step 25; its progress log
    is what the training drills compare with. The saves are then dated an hour apart, as above."""
    from dr.training.examples import plain_pytorch

    argv = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
            plain_pytorch.__file__, "--root", f"{root}/run-a", "--steps", "40", "--save-every", "10",
            "--fail-at", str(TRAINED_FAILS_AT), "--step-seconds", "0.05"]
    done = subprocess.run(argv, env={**os.environ, "DR_PROGRESS_FILE": progress_log, "OMP_NUM_THREADS": "1"},
                          capture_output=True, text=True, timeout=600)
    last = f"{root}/run-a/step-{TRAINED_SAVES[-1]}"
    if not os.path.isfile(f"{last}/.metadata"):
        raise RuntimeError(f"the demo's training run saved no {last}: {done.stderr[-600:]}")
    for n, step in enumerate(TRAINED_SAVES):
        _date(f"{root}/run-a/step-{step}", time.time() - (len(TRAINED_SAVES) - n) * EVERY_SECONDS)


def _save(state: dict, path: str, ended: float) -> None:
    import torch.distributed.checkpoint as dcp

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # one process, no process group: DCP warns, and works
        dcp.save(state, checkpoint_id=path)
    _date(path, ended)


def _date(path: str, ended: float) -> None:
    """The files of a save dated as a real one: written over SAVE_SECONDS, ending at `ended`."""
    names = sorted(os.listdir(path), key=lambda name: name == ".metadata")  # the index last, as DCP writes it
    for i, name in enumerate(names):
        t = ended if name == ".metadata" else ended - SAVE_SECONDS + i
        os.utime(os.path.join(path, name), (t, t))


def loads_equal(path: str, expected: dict) -> bool:
    """dcp.load the checkpoint at `path` into zeroed tensors and compare with `expected`."""
    import torch
    import torch.distributed.checkpoint as dcp

    target = {"model": {k: torch.zeros_like(v) for k, v in expected["model"].items()}}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dcp.load(target, checkpoint_id=path)
    return all(torch.equal(target["model"][k], v) for k, v in expected["model"].items())
