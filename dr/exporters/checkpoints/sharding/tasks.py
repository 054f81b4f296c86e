"""The shard plan of one checkpoint copy, and the result object each shard leaves beside it.

Both are small JSON objects in the DR target, under the copy's own dr objects (so a pruned or
swept copy takes them with it, and no cluster object has to hold a file list):

    <copy>/dr-shards/task.json         the coordinator's: where from and to, how to copy, and
                                       every shard's files (path, size, source version)
    <copy>/dr-shards/result-<i>.json   shard i's: the task's digest, and every file it stored
                                       with its size and SHA-256

Why the split is recorded rather than recomputed by each shard: every shard then copies
exactly the files, sizes and source versions the coordinator judged complete, and the
coordinator checks each result against the same list.

The split is deterministic and balanced by size: files, largest first (ties by path), each
to the shard holding the fewest bytes so far (the longest-processing-time rule: no shard
ends with more than 4/3 of the best possible maximum).
"""

from __future__ import annotations

import hashlib
import heapq
import json
from dataclasses import dataclass

from dr.exporters.checkpoints.copies.layout import Layout, canonical

TASK_FORMAT = "dr-checkpoint-shard-task"
RESULT_FORMAT = "dr-checkpoint-shard-result"
FOLDER = "dr-shards"


@dataclass(frozen=True)
class ShardFile:
    rel: str  # relative to the checkpoint (and to the copy)
    src: str  # the source path, relative to the root
    size: int
    version: str  # the source version the coordinator listed (ETag; size and mtime)

    def to_json(self) -> dict:
        return {"rel": self.rel, "src": self.src, "size": self.size, "version": self.version}


def split(files: list[ShardFile], count: int) -> list[list[ShardFile]]:
    """`count` shares, balanced by bytes; each share sorted by path."""
    shares: list[list[ShardFile]] = [[] for _ in range(count)]
    heap = [(0, i) for i in range(count)]
    for f in sorted(files, key=lambda f: (-f.size, f.rel)):
        load, i = heapq.heappop(heap)
        shares[i].append(f)
        heapq.heappush(heap, (load + f.size, i))
    return [sorted(s, key=lambda f: f.rel) for s in shares]


def task_key(layout: Layout) -> str:
    return f"{layout.meta_prefix}{FOLDER}/task.json"


def result_key(layout: Layout, index: int) -> str:
    return f"{layout.meta_prefix}{FOLDER}/result-{index}.json"


def shard_keys(layout: Layout, count: int) -> list[str]:
    return [task_key(layout)] + [result_key(layout, i) for i in range(count)]


def task_bytes(*, source: dict, copy: dict, checkpoint: dict, layout: Layout, transfer: dict,
               shares: list[list[ShardFile]]) -> bytes:
    return canonical({"format": TASK_FORMAT, "version": 1, "source": source, "copy": copy,
                      "checkpoint": checkpoint, "layout": {"key": layout.key, "is_dir": layout.is_dir},
                      "transfer": transfer, "count": len(shares),
                      "shards": [[f.to_json() for f in share] for share in shares]})


def digest(raw: bytes) -> str:
    return hashlib.sha256(raw).hexdigest()


def parse_task(raw: bytes, where: str) -> dict:
    try:
        task = json.loads(raw)
    except ValueError as exc:
        raise ValueError(f"{where}: not JSON ({exc})") from None
    if not isinstance(task, dict) or task.get("format") != TASK_FORMAT or task.get("version") != 1:
        raise ValueError(f"{where}: not a version-1 {TASK_FORMAT}")
    return task


def share_of(task: dict, index: int) -> list[ShardFile]:
    return [ShardFile(f["rel"], f["src"], int(f["size"]), f["version"]) for f in task["shards"][index]]


def result_bytes(task_sha256: str, index: int, files: dict[str, tuple[int, str]], skipped: int,
                 uploaded: int) -> bytes:
    """files: rel -> (size, sha256), every file of the shard's share."""
    return canonical({"format": RESULT_FORMAT, "version": 1, "task": task_sha256, "index": index,
                      "files": [{"path": p, "size": s, "sha256": d} for p, (s, d) in sorted(files.items())],
                      "skipped": skipped, "bytes_uploaded": uploaded})
