"""The torch-free `.metadata` reader, checked against torch's own reader on real checkpoints,
and against pickles built to execute code."""

from __future__ import annotations

import io
import json
import os
import pickle
import pickletools
from pathlib import Path

import pytest
import torch
from torch.distributed.checkpoint.filesystem import _StorageInfo
from torch.distributed.checkpoint.metadata import (
    BytesStorageMetadata,
    Metadata,
    MetadataIndex,
    StorageMeta,
)

from dr.exporters.checkpoints.formats.dcp_metadata import (
    DcpMetadataError,
    UnsafePickleError,
    parse_dcp_metadata,
    parse_safetensors_index,
)
from dr.exporters.checkpoints.formats.dcp_pickle import DType, Layout, safe_load
from tests.checkpoints.conftest import DCP_VARIANTS
from tests.checkpoints.writers import torch_index_facts


def _ours(path: Path, name: str = ".metadata") -> dict:
    ix = parse_dcp_metadata((path / name).read_bytes())
    return {
        "required_sizes": ix.required_sizes,
        "tensor_entries": ix.tensor_entries,
        "bytes_entries": ix.bytes_entries,
        "chunk_entries": ix.chunk_entries,
        "storage_entries": ix.storage_entries,
        "version": ix.version,
    }


@pytest.mark.parametrize("variant", sorted(DCP_VARIANTS))
def test_required_sizes_match_torch(dcp_runs: Path, variant: str) -> None:
    ckpt = dcp_runs / variant
    theirs = torch_index_facts(ckpt)
    assert _ours(ckpt) == theirs
    # DCP appends entry after entry, so a whole file is exactly as long as its last entry ends.
    on_disk = {p.name: p.stat().st_size for p in ckpt.glob("*.distcp")}
    assert theirs["required_sizes"] == on_disk
    assert theirs["bytes_entries"] > 0 and theirs["tensor_entries"] > 0


def test_variants_really_have_several_files(dcp_runs: Path) -> None:
    assert len(torch_index_facts(dcp_runs / "threads_3")["required_sizes"]) == 3
    per_item = torch_index_facts(dcp_runs / "per_item")
    assert len(per_item["required_sizes"]) == per_item["storage_entries"] > 10


@pytest.mark.slow
def test_multirank_indexes_match_torch(multirank: Path) -> None:
    ok = multirank
    collective = torch_index_facts(ok / "collective")
    assert _ours(ok / "collective") == collective
    assert sorted(collective["required_sizes"]) == ["__0_0.distcp", "__1_0.distcp"]
    for rank in (0, 1):
        local = torch_index_facts(ok / "rank_local", rank=rank)
        assert _ours(ok / "rank_local", f"__{rank}.metadata") == local
        assert list(local["required_sizes"]) == [f"__{rank}_0.distcp"]


def test_every_torch_dtype_and_layout_reads_as_a_stand_in() -> None:
    dtypes = {getattr(torch, n) for n in dir(torch) if isinstance(getattr(torch, n), torch.dtype)}
    for dtype in dtypes:
        assert safe_load(pickle.dumps(dtype)) == DType(str(dtype).removeprefix("torch.")), dtype
    layouts = {getattr(torch, n) for n in dir(torch) if isinstance(getattr(torch, n), torch.layout)}
    for layout in layouts:
        assert safe_load(pickle.dumps(layout)) == Layout(str(layout))


def test_truncated_or_empty_metadata_is_an_error_not_a_crash(dcp_runs: Path) -> None:
    data = (dcp_runs / "step_1" / ".metadata").read_bytes()
    for cut in (0, 1, len(data) // 2, len(data) - 1):
        with pytest.raises(DcpMetadataError):
            parse_dcp_metadata(data[:cut])


def test_oversized_metadata_is_refused_before_unpickling(dcp_runs: Path) -> None:
    data = (dcp_runs / "step_1" / ".metadata").read_bytes()
    with pytest.raises(DcpMetadataError, match="over the"):
        parse_dcp_metadata(data, max_bytes=len(data) - 1)


def _torch_metadata(**storage: _StorageInfo) -> Metadata:
    """A genuine torch Metadata whose storage entries we choose."""
    return Metadata(
        state_dict_metadata={fqn: BytesStorageMetadata() for fqn in storage},
        storage_data={MetadataIndex(fqn): info for fqn, info in storage.items()},
        storage_meta=StorageMeta(checkpoint_id=Path("/ckpt"), save_id="x"),
    )


@pytest.mark.parametrize("bad_path", ["../other/__0_0.distcp", "/etc/passwd", "a/../../b", "", "a\\b"])
def test_storage_paths_cannot_leave_the_checkpoint(bad_path: str) -> None:
    md = _torch_metadata(x=_StorageInfo(bad_path, 0, 10))
    with pytest.raises(DcpMetadataError, match="path"):
        parse_dcp_metadata(pickle.dumps(md))


def test_entries_without_storage_are_reported() -> None:
    md = _torch_metadata(x=_StorageInfo("__0_0.distcp", 5, 10))
    md.state_dict_metadata["orphan"] = BytesStorageMetadata()
    ix = parse_dcp_metadata(pickle.dumps(md))
    assert ix.required_sizes == {"__0_0.distcp": 15}
    assert ix.unindexed == ("orphan",)


# ---- hostile pickles -------------------------------------------------------------------------


class _System:
    def __init__(self, command: str) -> None:
        self.command = command

    def __reduce__(self):  # what an attacker's pickle does: call os.system on load
        return (os.system, (self.command,))


def _sentinel_command(tmp_path: Path) -> tuple[str, Path]:
    sentinel = tmp_path / "pwned"
    return f"touch {sentinel}", sentinel


def test_pickle_calling_os_system_is_refused_without_running(tmp_path: Path) -> None:
    command, sentinel = _sentinel_command(tmp_path)
    data = pickle.dumps(_System(command))
    with pytest.raises(UnsafePickleError, match=r"(posix|os)\.system"):
        parse_dcp_metadata(data)
    assert not sentinel.exists()
    pickle.loads(data)  # the same bytes do run code in a plain unpickler: the test is real
    assert sentinel.exists()


def test_payload_hidden_inside_a_valid_index_is_refused(tmp_path: Path) -> None:
    command, sentinel = _sentinel_command(tmp_path)
    md = _torch_metadata(x=_StorageInfo("__0_0.distcp", 0, 1))
    md.planner_data = {"x": _System(command)}
    with pytest.raises(UnsafePickleError):
        parse_dcp_metadata(pickle.dumps(md))
    assert not sentinel.exists()


def _global_pickle(module: str, name: str, arg: str) -> bytes:
    """Protocol 4: STACK_GLOBAL(module, name)(arg); dotted names are legal at protocol 4."""
    def s(text: str) -> bytes:
        raw = text.encode()
        return b"\x8c" + bytes([len(raw)]) + raw

    return b"\x80\x04" + s(module) + s(name) + b"\x93" + s(arg) + b"\x85R."


@pytest.mark.parametrize(
    "module,name",
    [
        ("torch.distributed.checkpoint.metadata", "os.system"),  # dotted lookup inside an allowed module
        ("torch.distributed.checkpoint.filesystem", "os.system"),
        ("builtins", "eval"),
        ("builtins", "getattr"),
        ("torch", "load"),
        ("torch", "float_power"),  # a torch callable whose name starts like a dtype
        ("subprocess", "check_call"),
        ("pathlib", "Path.write_text"),
    ],
)
def test_every_other_global_is_refused(module: str, name: str, tmp_path: Path) -> None:
    data = _global_pickle(module, name, "print(1)")
    pickletools.dis(data, out=io.StringIO())  # well-formed: refused for its content
    with pytest.raises(UnsafePickleError, match="refused"):
        safe_load(data)


def test_persistent_ids_are_refused() -> None:
    with pytest.raises(UnsafePickleError, match="persistent"):
        safe_load(b"\x80\x04\x8c\x01x\x94Q.")


# ---- the HuggingFace index ---------------------------------------------------------------------


def test_safetensors_index_lists_its_shards() -> None:
    weight_map = {"a": "m-1.safetensors", "b": "m-2.safetensors", "c": "m-1.safetensors"}
    data = json.dumps({"metadata": {"total_size": 3}, "weight_map": weight_map}).encode()
    ix = parse_safetensors_index(data)
    assert ix.self_describing == ("m-1.safetensors", "m-2.safetensors")
    assert ix.tensor_entries == 3
    for bad in (data[:-1], b'{"weight_map": {"a": "../x.safetensors"}}', b"[]"):
        with pytest.raises(DcpMetadataError):
            parse_safetensors_index(bad)
