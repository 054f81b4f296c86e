"""Find what looks like a checkpoint under a root; judging it is completeness.py's job.

Why this split: discovery is one listing of the whole tree (one paged LIST on S3), cheap and
repeated every backup; assessment reads indexes and headers, only for candidates. Run and
step naming (run_x/step_100) is the caller's business: this only recognises formats.

Recognised (torch 2.13 naming, read from torch/distributed/checkpoint/filesystem.py):
  dcp                a directory holding `.metadata`, `__<rank>.metadata`, a temporary
                     `.metadata.tmp` / `__<rank>.metadata.tmp`, or `*.distcp` data files (so a
                     save that died before its index is still found, and reported)
  safetensors-index  a directory holding `*.safetensors.index.json` (HuggingFaceStorageWriter,
                     HF save_pretrained with shards)
  marked             a directory holding one of the caller's completion markers (`COMPLETE`)
  torch-save         a `*.pt` / `*.pth` file outside the directories above
  safetensors        a `*.safetensors` file outside the directories above
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Iterable, Iterator

from dr.exporters.checkpoints.formats.tree import FileTree, as_tree, parent_of

DEFAULT_MARKER_NAMES = ("COMPLETE",)
META = re.compile(r"^(?:__(\d+))?\.metadata$")
META_TMP = re.compile(r"^(?:__\d+)?\.metadata\.tmp$")
ST_INDEX = ".safetensors.index.json"
TORCH_SAVE = (".pt", ".pth")
SAFETENSORS = (".safetensors",)
DIR_KINDS = ("dcp", "safetensors-index", "marked")


@dataclass(frozen=True)
class Candidate:
    """Something that looks like a checkpoint, relative to the tree root.

    kind:    dcp | safetensors-index | marked (directories), torch-save | safetensors (files)
    markers: the caller's marker names seen in the directory at discovery; assess requires
             them still present.
    """

    kind: str
    path: str
    markers: tuple[str, ...] = ()


def discover(
    root: FileTree | str | os.PathLike[str], marker_names: Iterable[str] = DEFAULT_MARKER_NAMES
) -> Iterator[Candidate]:
    """Yield candidates under root, outermost first; nothing inside a yielded directory is
    yielded again (a marked run directory owns the DCP or safetensors files inside it)."""
    tree, markers = as_tree(root), tuple(marker_names)
    by_dir: dict[str, list[str]] = {}
    for f in tree.list_files(""):
        by_dir.setdefault(parent_of(f.path), []).append(f.name)
    owned: list[str] = []
    for d in sorted(by_dir, key=lambda p: (p.count("/") + bool(p), p)):
        if any(d == o or d.startswith(o + "/") for o in owned):
            continue
        names = sorted(by_dir[d])
        cand = _dir_candidate(d, names, markers)
        if cand is not None:
            owned.append(d)
            yield cand
            continue
        yield from _file_candidates(d, names)


def _dir_candidate(d: str, names: list[str], markers: tuple[str, ...]) -> Candidate | None:
    found = tuple(m for m in markers if m in names)
    if any(META.match(n) or META_TMP.match(n) or n.endswith(".distcp") for n in names):
        return Candidate("dcp", d, found)
    if any(n.endswith(ST_INDEX) for n in names):
        return Candidate("safetensors-index", d, found)
    return Candidate("marked", d, found) if found else None


def _file_candidates(d: str, names: list[str]) -> Iterator[Candidate]:
    for n in names:
        path = f"{d}/{n}" if d else n
        if n.endswith(TORCH_SAVE):
            yield Candidate("torch-save", path)
        elif n.endswith(SAFETENSORS):
            yield Candidate("safetensors", path)
