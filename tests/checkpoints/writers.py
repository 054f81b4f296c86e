"""Real checkpoint writers for the tests, including ones that die at a chosen stage.

Every checkpoint here is written by torch itself (torch.distributed.checkpoint.save on CPU,
torch.save, safetensors), so the tests judge the files trainers really produce. A "dying"
writer is torch's own FileSystemWriter with its filesystem hooks raising at one step of the
save (mid-shard, before the index, mid-index, before the old index is deleted, before the
rename): the directory is left exactly as a killed trainer leaves it.
"""

from __future__ import annotations

import io
import warnings
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import torch
import torch.distributed.checkpoint as dcp
import torch.nn as nn
from torch.distributed.checkpoint import FileSystemReader, FileSystemWriter
from torch.distributed.checkpoint.api import CheckpointException
from torch.distributed.checkpoint.filesystem import FileSystem
from torch.distributed.checkpoint.metadata import BytesStorageMetadata, TensorStorageMetadata

#: dcp.save's stages at which a DyingWriter can be killed
STAGES = ("mid-shard", "before-index", "mid-index", "before-delete-old-index", "before-rename")


#: the versions a run records in its checkpoints (code, image, config, data)
VERSIONS = {"git_sha": "3f2a9058c0ffee", "image_digest": "sha256:" + "ab" * 32, "config_hash": "cfg-77e1",
            "data_version": "tokens-v4"}


class WriterDied(RuntimeError):
    """Raised inside torch's save to stand for the process being killed."""


class Trainer:
    """A small model, Adam optimizer and LR scheduler; step() trains once so optimizer state
    exists. Its state() is the full training state a run resumes from."""

    def __init__(self, seed: int = 0) -> None:
        torch.manual_seed(seed)
        self.model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
        self.opt = torch.optim.Adam(self.model.parameters(), lr=1e-2)
        self.sched = torch.optim.lr_scheduler.StepLR(self.opt, step_size=10)
        self.steps = 0

    def step(self, n: int = 1) -> None:
        for _ in range(n):
            self.opt.zero_grad()
            loss = self.model(torch.randn(32, 8)).pow(2).mean()
            loss.backward()
            self.opt.step()
            self.sched.step()
            self.steps += 1

    def state(self) -> dict[str, Any]:
        """Tensors (fp32 and bf16), optimizer and scheduler state, RNG state, the data
        position, and plain Python values (bytes entries)."""
        return {
            "model": self.model.state_dict(),
            "optim": self.opt.state_dict(),
            "lr_scheduler": self.sched.state_dict(),
            "rng": {"torch": torch.get_rng_state()},
            "dataloader": {"epoch": 0, "batches_seen": self.steps},
            "extra": {
                "step": self.steps,
                "note": f"step {self.steps}",
                "ema": torch.ones(5, dtype=torch.bfloat16),
            },
            "versions": dict(VERSIONS),
        }

    def weights(self) -> dict[str, Any]:
        """What a model release (or a careless trainer) saves: the weights alone."""
        return {"model": self.model.state_dict()}


def _quiet_save(state: dict[str, Any], writer: FileSystemWriter) -> None:
    """dcp.save without a process group warns "assuming a single process" (that is the
    point here) and warns when overwriting (some tests overwrite on purpose)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        dcp.save(state, storage_writer=writer)


def save_dcp(path: Path, state: dict[str, Any], **writer_kwargs: Any) -> None:
    _quiet_save(state, FileSystemWriter(str(path), **writer_kwargs))


class _DieAfter(io.RawIOBase):
    """A write stream that writes `limit` bytes and then 'kills the process'."""

    def __init__(self, raw: Any, limit: int) -> None:
        super().__init__()
        self._raw, self._left = raw, limit

    def writable(self) -> bool:
        return True

    def write(self, b: Any) -> int:
        data = bytes(b)
        if len(data) > self._left:
            self._raw.write(data[: self._left])
            self._raw.flush()
            raise WriterDied("killed while writing")
        self._left -= len(data)
        return self._raw.write(data)

    def tell(self) -> int:
        return self._raw.tell()

    def flush(self) -> None:
        self._raw.flush()

    def fileno(self) -> int:
        return self._raw.fileno()


class _DyingFS(FileSystem):
    def __init__(self, stage: str, limit: int) -> None:
        self.stage, self.limit = stage, limit

    @contextmanager
    def create_stream(self, path: Any, mode: str):  # type: ignore[override]
        with super().create_stream(path, mode) as stream:
            name = Path(path).name
            if (self.stage == "mid-shard" and name.endswith(".distcp")) or (
                self.stage == "mid-index" and name.endswith(".metadata.tmp")
            ):
                yield _DieAfter(stream, self.limit)
            else:
                yield stream

    def rm_file(self, path: Any) -> None:
        if self.stage == "before-delete-old-index":
            raise WriterDied("killed before deleting the old index")
        super().rm_file(path)

    def rename(self, path: Any, new_path: Any) -> None:
        if self.stage == "before-rename":
            raise WriterDied("killed before the rename")
        super().rename(path, new_path)


class DyingWriter(FileSystemWriter):
    """torch's FileSystemWriter, killed at `stage` (one of STAGES)."""

    def __init__(self, path: str, stage: str, limit: int = 200, **kwargs: Any) -> None:
        assert stage in STAGES, stage
        super().__init__(path, **kwargs)
        self.stage = stage
        self.fs = _DyingFS(stage, limit)

    def finish(self, metadata: Any, results: Any) -> None:
        if self.stage == "before-index":
            raise WriterDied("killed after the shards, before the index")
        super().finish(metadata, results)


def save_dcp_dying(path: Path, state: dict[str, Any], stage: str, **kwargs: Any) -> None:
    """Run a real dcp.save that dies at `stage`; the exception it dies with is swallowed."""
    try:
        _quiet_save(state, DyingWriter(str(path), stage, **kwargs))
    except (WriterDied, CheckpointException) as exc:  # dcp wraps rank failures (a BaseException)
        assert "killed" in str(exc), exc
    else:
        raise AssertionError(f"writer did not die at {stage}")


def torch_index_facts(path: Path, rank: int | None = None) -> dict[str, Any]:
    """What torch's own reader says about a checkpoint, in the shape of our DcpIndex."""
    md = FileSystemReader(str(path)).read_metadata(rank=rank)
    required: dict[str, int] = {}
    for info in md.storage_data.values():
        end = info.offset + info.length
        required[info.relative_path] = max(required.get(info.relative_path, 0), end)
    values = md.state_dict_metadata.values()
    return {
        "required_sizes": required,
        "tensor_entries": sum(isinstance(v, TensorStorageMetadata) for v in values),
        "bytes_entries": sum(isinstance(v, BytesStorageMetadata) for v in values),
        "chunk_entries": sum(len(v.chunks) for v in values if isinstance(v, TensorStorageMetadata)),
        "storage_entries": len(md.storage_data),
        "version": md.version,
    }


def truncate(path: Path, by: int = 1) -> None:
    with open(path, "r+b") as f:
        f.truncate(path.stat().st_size - by)
