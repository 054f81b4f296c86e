"""Integrity of single-file checkpoints, read from their structure alone (nothing loaded).

Why structure is enough: both formats put a self-describing index at one end of the file.
A writer that dies mid-file leaves that index missing (torch.save zip: the central directory
is written last) or pointing past the end (safetensors: the header is written first and
promises every byte that follows). Neither check unpickles or allocates tensors.
"""

from __future__ import annotations

import io
import json
import struct
import zipfile

from dr.exporters.checkpoints.formats.tree import FileTree, RangeFile
from dr.kits.places.files import FileStat

#: safetensors refuses headers over 100 MB; so do we, before reading one.
SAFETENSORS_MAX_HEADER = 100_000_000
_ST_DTYPE_BYTES = {
    "BOOL": 1, "U8": 1, "I8": 1, "F8_E5M2": 1, "F8_E4M3": 1, "F8_E8M0": 1,
    "U16": 2, "I16": 2, "F16": 2, "BF16": 2,
    "U32": 4, "I32": 4, "F32": 4,
    "U64": 8, "I64": 8, "F64": 8, "C64": 8,
}  # fmt: skip


def check_torch_zip(tree: FileTree, f: FileStat) -> list[str]:
    """Reasons a `torch.save` archive is incomplete; [] when its zip structure is whole."""
    raw = RangeFile(tree, f.path, f.size)
    try:
        with zipfile.ZipFile(io.BufferedReader(raw, buffer_size=64 * 1024)) as zf:
            infos = zf.infolist()
            cd_start = getattr(zf, "start_dir", None)
    except zipfile.BadZipFile as exc:
        if _is_legacy_pickle(tree, f):
            return [f"{f.path}: legacy (non-zip) torch.save format; completeness cannot be checked"]
        return [f"{f.path}: zip central directory unreadable ({exc}): truncated or not written"]
    except (OSError, EOFError, ValueError) as exc:
        return [f"{f.path}: zip structure unreadable ({type(exc).__name__}: {exc})"]
    return _zip_layout_reasons(f.path, infos, cd_start)


def _zip_layout_reasons(path: str, infos: list[zipfile.ZipInfo], cd_start: int | None) -> list[str]:
    """Entries must not overlap each other or the central directory (which would mean the
    directory was written over a shorter archive); torch.save always writes a data.pkl."""
    if not any(i.filename == "data.pkl" or i.filename.endswith("/data.pkl") for i in infos):
        return [f"{path}: zip has no data.pkl: not a torch.save archive"]
    ordered = sorted(infos, key=lambda i: i.header_offset)
    ends = [i.header_offset for i in ordered[1:]] + ([cd_start] if cd_start is not None else [])
    for info, limit in zip(ordered, ends):
        if info.header_offset + info.compress_size > limit:
            return [f"{path}: zip entry {info.filename} runs past the next record: corrupt archive"]
    return []


def _is_legacy_pickle(tree: FileTree, f: FileStat) -> bool:
    # torch.save(_use_new_zipfile_serialization=False) starts with a pickle protocol marker.
    return tree.read(f.path, 0, 1) == b"\x80"


def check_safetensors(tree: FileTree, f: FileStat) -> list[str]:
    """Reasons a safetensors file is incomplete; [] when the header accounts for exactly the
    bytes that follow it (the format has no other terminator to look for)."""
    if f.size < 8:
        return [f"{f.path}: {f.size} bytes, shorter than the 8-byte safetensors header length"]
    (n,) = struct.unpack("<Q", tree.read(f.path, 0, 8))
    if n > SAFETENSORS_MAX_HEADER:
        return [f"{f.path}: header length {n} is over the safetensors limit: not safetensors"]
    if 8 + n > f.size:
        return [f"{f.path}: header needs {8 + n} bytes but the file has {f.size}: truncated"]
    try:
        header = json.loads(tree.read(f.path, 8, n))
    except ValueError as exc:
        return [f"{f.path}: safetensors header is not JSON ({exc})"]
    if not isinstance(header, dict):
        return [f"{f.path}: safetensors header is not a JSON object"]
    return _safetensors_entry_reasons(f, header, f.size - 8 - n)


def _safetensors_entry_reasons(f: FileStat, header: dict, data_len: int) -> list[str]:
    max_end, reasons = 0, []
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        try:
            begin, end = (int(x) for x in entry["data_offsets"])
            shape, dtype = [int(d) for d in entry["shape"]], entry["dtype"]
        except (KeyError, TypeError, ValueError):
            return [f"{f.path}: tensor {name!r} has no valid data_offsets/shape/dtype"]
        if not 0 <= begin <= end:
            return [f"{f.path}: tensor {name!r} has data_offsets [{begin}, {end}]"]
        want = _nbytes(dtype, shape)
        if want is not None and end - begin != want:
            reasons.append(
                f"{f.path}: tensor {name!r} spans {end - begin} bytes, {dtype}{shape} needs {want}"
            )
        max_end = max(max_end, end)
    if max_end != data_len:
        how = "truncated" if max_end > data_len else "trailing bytes"
        reasons.append(
            f"{f.path}: header describes {max_end} data bytes, file holds {data_len} ({how})"
        )
    return reasons


def _nbytes(dtype: str, shape: list[int]) -> int | None:
    size = _ST_DTYPE_BYTES.get(dtype)
    if size is None:  # sub-byte or future dtypes: only the total-length rule applies
        return None
    for d in shape:
        size *= d
    return size
