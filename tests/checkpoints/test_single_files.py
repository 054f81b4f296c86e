"""Single-file checkpoints (torch.save zip, safetensors) and HF-style safetensors indexes,
written by the real libraries; each verdict is checked against whether the library itself
can load the file, so the structural checks cannot drift from what loading needs."""

from __future__ import annotations

import json
import struct
import zipfile
from pathlib import Path

import pytest
import safetensors.torch
import torch
from torch.distributed.checkpoint import HuggingFaceStorageWriter

from dr.exporters.checkpoints.formats.completeness import Candidate, MarkerRule, Completeness, assess_settled
from dr.kits.places.files import FileStat, LocalTree
from tests.checkpoints.writers import Trainer, _quiet_save, truncate


def judge(
    root: Path, kind: str, path: str, markers: tuple[MarkerRule, ...] = (), sleep=lambda s: None
) -> Completeness:
    return assess_settled(LocalTree(root), Candidate(kind, path), 5.0, markers, sleep=sleep)


def only_reason(verdict: Completeness) -> str:
    assert not verdict.complete and len(verdict.reasons) == 1, verdict.reasons
    return verdict.reasons[0]


@pytest.fixture
def trainer() -> Trainer:
    t = Trainer()
    t.step(3)
    return t


def _loads_with_torch(path: Path) -> bool:
    try:
        torch.load(path, weights_only=True)
        return True
    except Exception:
        return False


# ---- torch.save ---------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["model.pt", "model.pth"])
def test_torch_save_whole_then_truncated(tmp_path: Path, trainer: Trainer, name: str) -> None:
    path = tmp_path / name
    torch.save({"model": trainer.model.state_dict(), "optim": trainer.opt.state_dict()}, path)
    assert judge(tmp_path, "torch-save", name).complete and _loads_with_torch(path)
    full = path.read_bytes()
    for cut in (1, 22, len(full) // 2):  # 22: the end-of-central-directory record
        path.write_bytes(full[:-cut])
        assert "zip central directory unreadable" in only_reason(judge(tmp_path, "torch-save", name))
        assert not _loads_with_torch(path)


def test_torch_save_legacy_format_is_not_called_complete(tmp_path: Path, trainer: Trainer) -> None:
    torch.save(trainer.model.state_dict(), tmp_path / "old.pt", _use_new_zipfile_serialization=False)
    assert "legacy (non-zip) torch.save format" in only_reason(judge(tmp_path, "torch-save", "old.pt"))


def test_a_zip_that_is_not_torch_save(tmp_path: Path) -> None:
    with zipfile.ZipFile(tmp_path / "notes.pt", "w") as zf:
        zf.writestr("readme.txt", "hello")
    assert "no data.pkl" in only_reason(judge(tmp_path, "torch-save", "notes.pt"))


def test_torch_save_still_growing(tmp_path: Path, trainer: Trainer) -> None:
    path = tmp_path / "model.pt"
    torch.save(trainer.model.state_dict(), path)

    def writer_appends(seconds: float) -> None:
        with open(path, "ab") as f:
            f.write(b"more")

    reasons = judge(tmp_path, "torch-save", "model.pt", sleep=writer_appends).reasons
    assert "changed during the settle window: model.pt size" in reasons[0]


def test_a_sibling_being_written_does_not_unsettle_a_file(tmp_path: Path, trainer: Trainer) -> None:
    torch.save(trainer.model.state_dict(), tmp_path / "step_100.pt")

    def next_checkpoint_starts(seconds: float) -> None:
        (tmp_path / "step_200.pt").write_bytes(b"PK\x03\x04 partial")

    verdict = judge(tmp_path, "torch-save", "step_100.pt", sleep=next_checkpoint_starts)
    assert verdict.complete, verdict.reasons
    assert list(verdict.files) == ["step_100.pt"]


def test_single_file_markers_are_looked_for_beside_it(tmp_path: Path, trainer: Trainer) -> None:
    torch.save(trainer.model.state_dict(), tmp_path / "model.pt")
    rule = (MarkerRule("model.pt.done"),)
    reason = only_reason(judge(tmp_path, "torch-save", "model.pt", rule))
    assert reason == "required marker 'model.pt.done' is missing"
    (tmp_path / "model.pt.done").touch()
    assert judge(tmp_path, "torch-save", "model.pt", rule).complete


# ---- safetensors ----------------------------------------------------------------------------------


def _tensors(trainer: Trainer) -> dict[str, torch.Tensor]:
    named = {k: v.contiguous() for k, v in trainer.model.state_dict().items()}
    return {**named, "half": torch.ones(3, 5, dtype=torch.bfloat16), "flag": torch.tensor([True, False])}


def _loads_with_safetensors(path: Path) -> bool:
    try:
        safetensors.torch.load_file(path)
        return True
    except Exception:
        return False


def test_safetensors_whole_then_damaged(tmp_path: Path, trainer: Trainer) -> None:
    path = tmp_path / "w.safetensors"
    safetensors.torch.save_file(_tensors(trainer), path, metadata={"step": "3"})
    assert judge(tmp_path, "safetensors", "w.safetensors").complete and _loads_with_safetensors(path)
    full = path.read_bytes()
    (header_len,) = struct.unpack("<Q", full[:8])
    data_len = len(full) - 8 - header_len

    path.write_bytes(full[:-1])
    assert only_reason(judge(tmp_path, "safetensors", "w.safetensors")) == (
        f"w.safetensors: header describes {data_len} data bytes, file holds {data_len - 1} (truncated)"
    )
    assert not _loads_with_safetensors(path)

    path.write_bytes(full[: 8 + header_len // 2])
    assert "header needs" in only_reason(judge(tmp_path, "safetensors", "w.safetensors"))
    path.write_bytes(full[:5])
    assert "shorter than the 8-byte" in only_reason(judge(tmp_path, "safetensors", "w.safetensors"))
    path.write_bytes(full + b"\0")
    assert "(trailing bytes)" in only_reason(judge(tmp_path, "safetensors", "w.safetensors"))
    assert not _loads_with_safetensors(path)


def test_safetensors_entry_that_lies_about_its_length(tmp_path: Path) -> None:
    """Written by hand: the safetensors library refuses to write such a file."""
    header = json.dumps({"a": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 12]}}).encode()
    path = tmp_path / "bad.safetensors"
    path.write_bytes(struct.pack("<Q", len(header)) + header + b"\0" * 12)
    reason = only_reason(judge(tmp_path, "safetensors", "bad.safetensors"))
    assert "spans 12 bytes, F32[2, 2] needs 16" in reason
    assert not _loads_with_safetensors(path)


# ---- DCP's HuggingFace writer: model.safetensors.index.json + shards -----------------------------


def test_hf_storage_writer_checkpoint(tmp_path: Path, trainer: Trainer) -> None:
    ckpt = tmp_path / "hf"
    state = trainer.model.state_dict()
    mapping = {k: 1 + i % 2 for i, k in enumerate(state)}  # two shard files
    _quiet_save(state, HuggingFaceStorageWriter(str(ckpt), fqn_to_index_mapping=mapping))
    shards = sorted(p.name for p in ckpt.glob("*.safetensors"))
    assert len(shards) == 2 and (ckpt / "model.safetensors.index.json").exists()
    verdict = judge(tmp_path, "safetensors-index", "hf")
    assert verdict.complete, verdict.reasons
    assert verdict.indexes["model.safetensors.index.json"].self_describing == tuple(shards)

    truncate(ckpt / shards[1], by=1)
    assert f"{shards[1]}: header describes" in only_reason(judge(tmp_path, "safetensors-index", "hf"))
    (ckpt / shards[1]).unlink()
    assert f"missing storage files: {shards[1]}" in only_reason(judge(tmp_path, "safetensors-index", "hf"))
    truncate(ckpt / "model.safetensors.index.json", by=3)
    reasons = judge(tmp_path, "safetensors-index", "hf").reasons
    assert any("model.safetensors.index.json unreadable" in r for r in reasons)


# ---- reads stay small: what an object-store tree will pay -------------------------------------------


class CountingTree(LocalTree):
    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self.bytes_read = 0

    def read(self, path: str, start: int, length: int) -> bytes:
        data = super().read(path, start, length)
        self.bytes_read += len(data)
        return data


def test_structural_checks_read_only_headers(tmp_path: Path) -> None:
    big = {"w": torch.randn(1024, 1024)}  # 4 MiB
    torch.save(big, tmp_path / "big.pt")
    safetensors.torch.save_file(big, tmp_path / "big.safetensors")
    for kind, name in (("torch-save", "big.pt"), ("safetensors", "big.safetensors")):
        tree = CountingTree(tmp_path)
        assert assess_settled(tree, Candidate(kind, name), 0, sleep=lambda s: None).complete
        assert 0 < tree.bytes_read < 200_000, (name, tree.bytes_read)


def test_filestat_name() -> None:
    assert FileStat("a/b/c.pt", 1, 2).name == "c.pt"
