"""The demo's training run: two real PyTorch DCP checkpoints of a tiny model, and the check
that a restored one loads with tensors equal to what was saved.

torch is imported lazily: it comes with the `demo` extra; without it the demo skips this part.
"""

from __future__ import annotations

import warnings


def torch_available() -> bool:
    try:
        import torch.distributed.checkpoint  # noqa: F401
    except ImportError:
        return False
    return True


def save_run(root: str, steps: tuple[int, ...] = (100, 200)) -> dict:
    """Save root/run-a/step-N with torch.distributed.checkpoint; return the last state."""
    import torch
    import torch.distributed.checkpoint as dcp

    torch.manual_seed(0)
    model = torch.nn.Linear(32, 8)
    state = {}
    for step in steps:
        with torch.no_grad():
            model.weight.add_(0.01 * step)
        state = {"model": {k: v.clone() for k, v in model.state_dict().items()}}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # one process, no process group: DCP warns, and works
            dcp.save(state, checkpoint_id=f"{root}/run-a/step-{step}")
    return state


def loads_equal(path: str, expected: dict) -> bool:
    """dcp.load the checkpoint at `path` into zeroed tensors and compare with `expected`."""
    import torch
    import torch.distributed.checkpoint as dcp

    target = {"model": {k: torch.zeros_like(v) for k, v in expected["model"].items()}}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dcp.load(target, checkpoint_id=path)
    return all(torch.equal(target["model"][k], v) for k, v in expected["model"].items())
