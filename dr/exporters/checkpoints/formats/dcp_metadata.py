"""What a checkpoint's index says its files must hold, read without torch.

Why: a sharded checkpoint is complete only if every file its index references holds the
bytes the index points at. Two indexes exist in torch 2.13's distributed checkpointing:

- `.metadata` (and `__<rank>.metadata` when saved with use_collectives=False), the pickle
  FileSystemWriter.finish writes. Read here through dcp_pickle.safe_load, which cannot run
  code. Each _StorageInfo(relative_path, offset, length) says a file must be at least
  offset+length bytes long; the index holds no digests, so length is all we can check.
- `model.safetensors.index.json`, written by HuggingFaceStorageWriter (and by HF
  `save_pretrained` when sharding): a `weight_map` {fqn: file}. Its files are safetensors,
  which describe their own length, so they are listed as self-describing.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from dr.kits.places import files
from dr.exporters.checkpoints.formats.dcp_pickle import (
    BytesStorageMetadata,
    DcpMetadataError,
    Metadata,
    MetadataIndex,
    StorageInfo,
    TensorStorageMetadata,
    UnsafePickleError,
    safe_load,
)

__all__ = [
    "DcpIndex",
    "DcpMetadataError",
    "StateEntry",
    "UnsafePickleError",
    "parse_dcp_metadata",
    "parse_safetensors_index",
    "check_relative_path",
]

#: An index larger than this is refused rather than read into memory.
DEFAULT_MAX_METADATA_BYTES = 256 * 1024 * 1024


@dataclass(frozen=True)
class DcpIndex:
    """What completeness needs from an index.

    required_sizes:  for every storage file referenced (path relative to the checkpoint
                     directory), the largest offset+length any entry needs; the file must be
                     at least this long.
    self_describing: files whose own header must be checked (safetensors shards); their
                     required size is only the 8-byte header length.
    unindexed:       state-dict entries (fqn, or fqn@offsets for a tensor chunk) with no
                     storage entry: an index like that cannot be fully loaded.
    """

    format: str  # "dcp-pickle" or "safetensors-index"
    version: str | None
    required_sizes: dict[str, int]
    tensor_entries: int
    bytes_entries: int
    chunk_entries: int
    storage_entries: int
    self_describing: tuple[str, ...] = ()
    unindexed: tuple[str, ...] = ()
    #: what the state dict holds, for the resume check (formats/contents.py)
    entries: tuple["StateEntry", ...] = ()


@dataclass(frozen=True)
class StateEntry:
    """One state-dict entry an index names.

    path:  its place in the state dict the trainer saved: DCP's planner_data (the flatten
           mapping of DefaultSavePlanner) when the index holds one, else the fqn split on '.'
    where: (file, offset, length) of a bytes entry (a torch.save'd Python value), else None
    """

    fqn: str
    path: tuple[str, ...]
    tensor: bool
    where: tuple[str, int, int] | None = None


def parse_dcp_metadata(data: bytes, max_bytes: int = DEFAULT_MAX_METADATA_BYTES) -> DcpIndex:
    """Parse the bytes of a DCP `.metadata` pickle; DcpMetadataError if unusable,
    UnsafePickleError if it names anything a DCP index never contains."""
    _check_length(data, max_bytes)
    md = safe_load(data)
    try:
        return _index_from(md)
    except (TypeError, AttributeError) as exc:  # a field of the wrong type somewhere
        raise DcpMetadataError(f"malformed DCP index field: {exc}") from None


def parse_safetensors_index(data: bytes, max_bytes: int = DEFAULT_MAX_METADATA_BYTES) -> DcpIndex:
    """Parse `model.safetensors.index.json`; written in place (no temp file), so a writer
    that died mid-write leaves JSON that does not parse."""
    _check_length(data, max_bytes)
    try:
        doc = json.loads(data)
    except ValueError as exc:
        raise DcpMetadataError(f"index JSON is unreadable (truncated?): {exc}") from None
    weight_map = doc.get("weight_map") if isinstance(doc, dict) else None
    if not isinstance(weight_map, dict) or not all(isinstance(v, str) for v in weight_map.values()):
        raise DcpMetadataError("index JSON has no weight_map of name -> file")
    files = sorted({check_relative_path(v) for v in weight_map.values()})
    return DcpIndex(
        format="safetensors-index",
        version=None,
        required_sizes={f: 8 for f in files},
        tensor_entries=len(weight_map),
        bytes_entries=0,
        chunk_entries=len(weight_map),
        storage_entries=len(weight_map),
        self_describing=tuple(files),
        entries=tuple(StateEntry(k, tuple(k.split(".")), True) for k in weight_map),
    )


def check_relative_path(path: Any) -> str:
    """A referenced file must stay inside the checkpoint directory: an untrusted index must
    not make us stat or read `/etc/...` or `../other-run/...` (the kit's check, in this
    module's error)."""
    try:
        return files.check_relative_path(path)
    except files.UnsafePath as exc:
        raise DcpMetadataError(f"storage file {exc}") from None


def _check_length(data: bytes, max_bytes: int) -> None:
    if len(data) > max_bytes:
        raise DcpMetadataError(f"index is {len(data)} bytes, over the {max_bytes} limit")
    if not data:
        raise DcpMetadataError("index is empty")


def _index_from(md: Any) -> DcpIndex:
    """Check the unpickled structure field by field; foreign shapes are errors, not guesses."""
    if not isinstance(md, Metadata):
        raise DcpMetadataError(f"the pickle holds a {type(md).__name__}, not a DCP Metadata")
    sdm, storage = md.state_dict_metadata, md.storage_data
    if not isinstance(sdm, dict):
        raise DcpMetadataError("state_dict_metadata is not a mapping")
    if not isinstance(storage, dict):
        raise DcpMetadataError("storage_data is not a mapping: not written by a FileSystemWriter")
    tensors = [v for v in sdm.values() if isinstance(v, TensorStorageMetadata)]
    n_bytes = sum(isinstance(v, BytesStorageMetadata) for v in sdm.values())
    if len(tensors) + n_bytes != len(sdm):
        raise DcpMetadataError("state_dict_metadata holds entries of an unknown kind")
    required = _required_sizes(storage)
    keys = {(k.fqn, _offsets(k.offset)) for k in storage}
    return DcpIndex(
        format="dcp-pickle",
        version=md.version if isinstance(md.version, str) else None,
        required_sizes=required,
        tensor_entries=len(tensors),
        bytes_entries=n_bytes,
        chunk_entries=sum(len(t.chunks) for t in tensors),
        storage_entries=len(storage),
        unindexed=_unindexed(sdm, keys),
        entries=_entries(sdm, storage, md.planner_data),
    )


def _required_sizes(storage: dict) -> dict[str, int]:
    required: dict[str, int] = {}
    for key, info in storage.items():
        if not isinstance(key, MetadataIndex) or not isinstance(info, StorageInfo):
            raise DcpMetadataError("storage_data entry is not MetadataIndex -> _StorageInfo")
        off, length = info.offset, info.length
        if not (_is_int(off) and _is_int(length) and off >= 0 and length >= 0):
            raise DcpMetadataError(f"bad offset/length for {key.fqn!r}: {off!r}, {length!r}")
        path = check_relative_path(info.relative_path)
        required[path] = max(required.get(path, 0), off + length)
    return required


def _entries(sdm: dict, storage: dict, planner_data: Any) -> tuple[StateEntry, ...]:
    mapping = planner_data if isinstance(planner_data, dict) else {}
    where = {k.fqn: (i.relative_path, i.offset, i.length) for k, i in storage.items() if k.offset is None}
    out = []
    for fqn, entry in sdm.items():
        path = mapping.get(fqn)
        if not isinstance(path, (tuple, list)) or not path:
            path = str(fqn).split(".")
        tensor = isinstance(entry, TensorStorageMetadata)
        out.append(StateEntry(str(fqn), tuple(str(p) for p in path), tensor, None if tensor else where.get(fqn)))
    return tuple(out)


def _unindexed(sdm: dict, keys: set) -> tuple[str, ...]:
    """State-dict entries no storage entry serves (DCP keys chunks by fqn + chunk offsets)."""
    missing = []
    for fqn, entry in sdm.items():
        if isinstance(entry, BytesStorageMetadata):
            if (fqn, None) not in keys:
                missing.append(str(fqn))
            continue
        for chunk in entry.chunks:
            if (fqn, _offsets(chunk.offsets)) not in keys:
                missing.append(f"{fqn}@{list(chunk.offsets)}")
    return tuple(missing)


def _offsets(value: Any) -> tuple[int, ...] | None:
    if value is None:
        return None
    if not isinstance(value, (tuple, list)) or not all(_is_int(v) for v in value):
        raise DcpMetadataError(f"tensor offsets {value!r} are not a sequence of ints")
    return tuple(value)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
