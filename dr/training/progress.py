"""The progress protocol's writer, for training processes: JSON lines appended to the file named
by $DR_PROGRESS_FILE, which `dr drill --training` reads (docs/readiness.md, "Training recovery
drills", is the normative description). Standard library only: copy this file into a trainer's
image if dr is not installed there.

    from dr.training.progress import Progress
    progress = Progress()                        # a no-op when DR_PROGRESS_FILE is unset; logs `started`
    progress.loaded(step=start_step)             # the checkpoint is loaded (resharded)
    progress.group_ready(world_size=world)       # the process group is up
    progress.step(step, samples=seen, loss=loss, lr=lr, sample_ids=ids)   # after each optimizer step
    progress.saved(step)                         # a checkpoint of `step` is complete

Only one process writes (rank 0: $RANK unset or "0", or `rank=` given): a drill reads one
stream. Each line is flushed when written, so a killed trainer's last step is on disk; lines
are appended in one write each, under 4 KiB, so a reader never sees half a line but the last.
Each process start logs `started` with its pid and torchrun's restart count
($TORCHELASTIC_RESTART_COUNT), so a failure drill sees the restart. `sample_ids` is kept as a digest (sha256 of the ids, in order, as decimal text joined by ","),
plus the ids themselves when there are at most `keep_ids` of them (the drill's repeat/skip
check reads them).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import time
from typing import Iterable

ENV = "DR_PROGRESS_FILE"
KEEP_IDS = 256


def sample_ids_digest(ids: Iterable[int]) -> str:
    """The digest the protocol records for one step's sample ids (order matters)."""
    return hashlib.sha256(",".join(str(int(i)) for i in ids).encode()).hexdigest()


class Progress:
    """Appends progress events for a drill; does nothing when no file is named or not rank 0."""

    def __init__(self, path: str | None = None, *, rank: int | None = None, keep_ids: int = KEEP_IDS) -> None:
        path = path if path is not None else os.environ.get(ENV, "")
        rank = rank if rank is not None else int(os.environ.get("RANK", "0") or 0)
        self.keep_ids = keep_ids
        self._handle = open(path, "a", encoding="utf-8") if path and rank == 0 else None
        self._write({"event": "started", "pid": os.getpid(), "restart": _restarts()})

    @property
    def active(self) -> bool:
        return self._handle is not None

    def loaded(self, step: int, **extra) -> None:
        self._write({"event": "loaded", "step": int(step), **extra})

    def group_ready(self, world_size: int | None = None, **extra) -> None:
        self._write({"event": "group_ready", **({"world_size": int(world_size)} if world_size else {}),
                     "restart": _restarts(), **extra})

    def step(self, step: int, *, samples: int | None = None, loss: float | None = None, lr: float | None = None,
             sample_ids: Iterable[int] | None = None, epoch: int | None = None, **extra) -> None:
        event: dict = {"event": "step", "step": int(step)}
        for name, value in (("samples", samples), ("epoch", epoch)):
            if value is not None:
                event[name] = int(value)
        for name, value in (("loss", loss), ("lr", lr)):
            if value is not None:
                event[name] = _number(value)
        if sample_ids is not None:
            ids = [int(i) for i in sample_ids]
            event["sample_ids_digest"] = sample_ids_digest(ids)
            if len(ids) <= self.keep_ids:
                event["sample_ids"] = ids
        self._write({**event, **extra})

    def saved(self, step: int, **extra) -> None:
        self._write({"event": "saved", "step": int(step), **extra})

    def close(self) -> None:
        if self._handle is not None:
            self._handle.close()
            self._handle = None

    def __enter__(self) -> "Progress":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _write(self, event: dict) -> None:
        if self._handle is None:
            return
        self._handle.write(json.dumps({**event, "t": round(time.time(), 6)}, separators=(",", ":")) + "\n")
        self._handle.flush()


def _restarts() -> int:
    value = os.environ.get("TORCHELASTIC_RESTART_COUNT", "0")
    return int(value) if value.isdigit() else 0


def _number(value) -> float | None:
    """A float the JSON line can hold (a tensor's .item() is the caller's; NaN and inf as null)."""
    number = float(value)
    return number if math.isfinite(number) else None
