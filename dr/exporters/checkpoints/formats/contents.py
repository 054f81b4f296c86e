"""What a checkpoint holds (its state-dict outline), read without torch, for the resume check.

Why: a checkpoint that restores is not necessarily one a training run can continue from. A
run needs its optimizer state, LR scheduler, step, RNG states and data-sampler position as
well as the weights (PyTorch's DCP docs: "save/load the full training state"). Whether they
are there is visible in the index alone, so it is checked on every backup at the cost of a
few small reads:

  dcp                the state-dict entries of every `.metadata` (planner_data gives each
                     flattened key its path in the saved dict)
  safetensors(-index) the tensor names of the header or the index's weight_map, and the
                     header's `__metadata__` strings
  torch-save         the key structure of the zip's `data.pkl` (saved_pickle.py: inert)
  directory files    every `.pt`/`.pth`/`.safetensors`/`.json` file of a directory checkpoint
                     (HF Trainer's optimizer.pt, scheduler.pt, rng_state.pth,
                     trainer_state.json), its file stem heading its entries' paths

Values are read only where `wanted(path)` says so (version fields: a git SHA, an image
digest): for DCP such a value is a small torch.save archive inside a `.distcp` file.
"""

from __future__ import annotations

import io
import json
import struct
from dataclasses import dataclass, field
from typing import Any, Callable

from dr.exporters.checkpoints.formats.dcp_metadata import DcpIndex
from dr.exporters.checkpoints.formats.discovery import DIR_KINDS, SAFETENSORS, ST_INDEX, TORCH_SAVE
from dr.exporters.checkpoints.formats.saved_pickle import SavedPickleError, data_pickle, is_tensor, leaves, load_inert, value
from dr.exporters.checkpoints.formats.single_file import SAFETENSORS_MAX_HEADER
from dr.exporters.checkpoints.formats.tree import FileTree, RangeFile
from dr.kits.places.files import FileStat

MAX_VALUE_BYTES = 1 << 20  # a version field's value, or a JSON sidecar, larger than this is not read
Wanted = Callable[[tuple[str, ...]], bool]


@dataclass
class Contents:
    """entries: (path in the saved state, is a tensor); values: the plain values read (only
    for wanted paths); problems: what could not be read (the outline is then partial)."""

    entries: list[tuple[tuple[str, ...], bool]] = field(default_factory=list)
    values: dict[tuple[str, ...], str] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    def add(self, path: tuple[str, ...], leaf: Any, wanted: Wanted) -> None:
        tensor = is_tensor(leaf)
        self.entries.append((path, tensor))
        if not tensor and wanted(path) and isinstance(leaf, (str, int)) and not isinstance(leaf, bool):
            self.values[path] = str(leaf)


def read_contents(tree: FileTree, kind: str, files: dict[str, FileStat], indexes: dict[str, DcpIndex],
                  wanted: Wanted) -> Contents:
    """The outline of one checkpoint: `files` keyed relative to it (its settled listing),
    `indexes` the parsed indexes completeness already read."""
    out = Contents()
    for name, ix in sorted(indexes.items()):
        _index_entries(tree, files, name, ix, wanted, out)
    for rel, f in sorted(files.items()):
        if kind in DIR_KINDS and (rel in indexes or rel.endswith(".distcp") or rel.endswith(ST_INDEX)):
            continue
        if kind == "safetensors-index" and rel.endswith(SAFETENSORS):
            continue  # its shards' tensors are the index's weight_map, already listed
        head = (_stem(rel),) if kind in DIR_KINDS else ()
        try:
            _file_entries(tree, f, rel, head, wanted, out)
        except (SavedPickleError, OSError, ValueError) as exc:
            out.problems.append(f"{rel}: {exc}")
    return out


def _index_entries(tree: FileTree, files: dict[str, FileStat], name: str, ix: DcpIndex, wanted: Wanted,
                   out: Contents) -> None:
    seen = {p for p, _ in out.entries}
    base = files[name].path.rsplit("/", 1)[0] if "/" in files[name].path else ""
    for e in ix.entries:
        if e.path in seen:
            continue  # rank-local indexes repeat replicated entries
        out.entries.append((e.path, e.tensor))
        if e.where is not None and wanted(e.path) and e.where[2] <= MAX_VALUE_BYTES:
            rel, offset, length = e.where
            try:
                v = value(tree.read(f"{base}/{rel}" if base else rel, offset, length))
            except (SavedPickleError, OSError) as exc:
                out.problems.append(f"{'.'.join(e.path)}: {exc}")
                continue
            if isinstance(v, (str, int)) and not isinstance(v, bool):
                out.values[e.path] = str(v)


def _file_entries(tree: FileTree, f: FileStat, rel: str, head: tuple[str, ...], wanted: Wanted,
                  out: Contents) -> None:
    if rel.endswith(TORCH_SAVE):
        obj = load_inert(data_pickle(io.BufferedReader(RangeFile(tree, f.path, f.size), 64 * 1024)))
        for path, leaf in leaves(obj):
            out.add(head + path, leaf, wanted)
    elif rel.endswith(SAFETENSORS):
        _safetensors_entries(tree, f, head, wanted, out)
    elif rel.endswith(".json") and not rel.startswith("dr-") and f.size <= MAX_VALUE_BYTES:
        for path, leaf in leaves(json.loads(tree.read(f.path, 0, f.size))):
            out.add(head + path, leaf, wanted)


def _safetensors_entries(tree: FileTree, f: FileStat, head: tuple[str, ...], wanted: Wanted,
                         out: Contents) -> None:
    (n,) = struct.unpack("<Q", tree.read(f.path, 0, 8))
    if n > SAFETENSORS_MAX_HEADER:
        raise ValueError(f"safetensors header length {n} is over the limit")
    header = json.loads(tree.read(f.path, 8, n))
    for name, entry in header.items():
        if name == "__metadata__" and isinstance(entry, dict):
            for key, text in entry.items():
                out.add(head + ("__metadata__", str(key)), text, wanted)
        else:
            out.entries.append((head + tuple(name.split(".")), True))


def _stem(rel: str) -> str:
    name = rel.rsplit("/", 1)[-1]
    return name.split(".", 1)[0] or name
