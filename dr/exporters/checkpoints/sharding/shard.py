"""One shard: copy this index's share of a checkpoint, journaled, and leave a result object.

Run as `python -m dr.exporters.checkpoints.sharding --pointer FILE` with JOB_COMPLETION_INDEX
set (a local executor's child, or a pod of an Indexed Job). FILE names the DR target and the
task's key there (tasks.py); the target's credentials come from the environment, as they do
for `dr backup` itself.

The copy goes through the same code as an unsharded one (copies/copying.copy_files): each
file gets its write-once journal entry just before it becomes visible, so a shard that is
killed and started again skips what it finished and resumes an interrupted multipart upload
from its stored parts. Before copying, the shard lists the checkpoint at the source: a file
whose size or version is no longer what the coordinator listed fails the shard (its bytes
would not be the checkpoint that was judged complete).
"""

from __future__ import annotations

import json
import os
from typing import Callable

from dr.exporters.checkpoints.copies.copying import CopyStats, copy_files
from dr.exporters.checkpoints.copies.layout import Layout, completed_files
from dr.exporters.checkpoints.formats.tree import parent_of
from dr.kits.places.files import FileStat
from dr.kits.places.contract import Place, SourceChanged
from dr.exporters.checkpoints.places.opening import open_place
from dr.exporters.checkpoints.scanning import Checkpoint
from dr.exporters.checkpoints.sharding.executors import INDEX_ENV
from dr.exporters.checkpoints.sharding.tasks import (ShardFile, digest, parse_task, result_bytes, result_key,
                                                       share_of)
from dr.exporters.checkpoints.transfer.transferring import Transfer


class ShardError(Exception):
    """The shard cannot start: no index, no task, an unreadable pointer (exit 2)."""


def shard_index(environ=os.environ) -> int:
    raw = environ.get(INDEX_ENV, "")
    if not raw.isdigit():
        raise ShardError(f"{INDEX_ENV} is {raw!r}: run shards through an executor (it sets the index)")
    return int(raw)


def read_pointer(path: str) -> tuple[dict, str]:
    try:
        with open(path, encoding="utf-8") as f:
            pointer = json.load(f)
        return pointer["copy"], pointer["task"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ShardError(f"{path}: not a shard pointer ({{copy, task}}): {exc}") from None


def run_shard(copy: dict, key: str, index: int, log: Callable[[str], None] = lambda m: None) -> dict:
    """Copy share `index` of the task at `key` in the place `copy`; returns the result written."""
    dst = open_place(copy)
    raw = dst.get(key)
    if raw is None:
        raise ShardError(f"{dst.url_of(key)} is missing: the coordinator writes it before starting shards")
    task = parse_task(raw, dst.url_of(key))
    if not 0 <= index < task["count"]:
        raise ShardError(f"{INDEX_ENV}={index}, but {dst.url_of(key)} has {task['count']} shards")
    layout = Layout(task["layout"]["key"], bool(task["layout"]["is_dir"]))
    share = share_of(task, index)
    src = open_place(task["source"])
    ck = _checkpoint(src, task["checkpoint"], layout, share)
    wanted = {f.rel: (f.size, f.version) for f in share}
    listing = {f.path: f for f in dst.list_files(layout.base) if layout.owns(f.path) or layout.is_dir}
    digests = completed_files(dst, layout, listing, wanted)
    stats = CopyStats(files_skipped=len(digests))
    todo = [f.rel for f in share if f.rel not in digests]
    t = task["transfer"]
    transfer = Transfer(src, dst, part_size=t.get("part_size"), max_buffer=int(t["max_buffer"]),
                        parallel_files=int(t["parallel_files"]), server_side=bool(t.get("server_side")))
    try:
        copy_files(ck, dst, layout, transfer, todo, wanted, digests, stats, listing)
    finally:
        transfer.close()
    files = {f.rel: (f.size, digests[f.rel]) for f in share}
    result = result_bytes(digest(raw), index, files, stats.files_skipped, stats.bytes_uploaded)
    dst.put(result_key(layout, index), result)
    log(f"shard {index} of {task['count']}: {stats.files_copied} files copied ({stats.bytes_uploaded} bytes "
        f"sent, {stats.bytes_reused} reused), {stats.files_skipped} already done")
    return json.loads(result)


def _checkpoint(src: Place, info: dict, layout: Layout, share: list[ShardFile]) -> Checkpoint:
    """The share as a Checkpoint, each file checked against a fresh listing of the source (which
    also gives S3 reads the ETag to send as If-Match)."""
    base = info["path"] if layout.is_dir else parent_of(info["path"])
    listed = {f.path: f for f in src.list_files(base)}
    files: dict[str, FileStat] = {}
    for f in share:
        got = listed.get(f.src)
        if got is None or got.size != f.size or src.version(f.src) != f.version:
            raise SourceChanged(f"{src.url_of(f.src)} changed or vanished since the coordinator listed it "
                                f"({f.size} bytes, version {f.version or '?'}): the checkpoint is no longer the "
                                "one judged complete")
        files[f.rel] = got
    return Checkpoint(src, 0, info["path"], info["kind"], info["run"], int(info["step"]), files, ())
