"""The coordinator of a sharded copy: split, run the shards, verify every result, then publish.

`dr backup` (in its CronJob) is the coordinator. For one checkpoint it writes the shard plan
(tasks.py) beside the copy, runs the shards through an executor (a local one, or an Indexed
Job), and waits for all of them. Then, and only then:
1. every shard's result object must be present, name this task's digest, and list exactly
   its share with the sizes the task gave;
2. every file must be stored with that size, under a journal entry whose SHA-256 is the one
   the result reports (the entry is written before the file becomes visible, by the shard
   that stored it: copies/copying.copy_files);
3. the coordinator copies the index and marker files itself (written last, so a half-copied
   directory never looks committed), writes the manifest from the verified digests, and the
   marker, once (copies/copying.publish_copy: create-only); then removes journal and shard
   objects.
A shard that failed all its retries leaves no manifest and no marker: the copy is reported
failed with each shard's reason, and the next backup runs the shards again, which skip
everything their journals show done.
"""

from __future__ import annotations

import json
import os
from typing import Callable

from dr.exporters.checkpoints.copies.copying import CopyResult, CopyStats, copy_files, publish_copy
from dr.exporters.checkpoints.copies.layout import CopyError, Layout, completed_files, read_copy
from dr.kits.places.contract import Place
from dr.exporters.checkpoints.scanning import Checkpoint
from dr.exporters.checkpoints.sharding.executors import Executor, ShardJob
from dr.exporters.checkpoints.sharding.tasks import (RESULT_FORMAT, ShardFile, digest, result_key, shard_keys,
                                                       split, task_bytes, task_key)
from dr.exporters.checkpoints.transfer.transferring import Transfer

MODULE = "dr.exporters.checkpoints.sharding"
POINTER = "pointer.json"
SHOWN = 5  # problems named in one error


def shardable(ck: Checkpoint, shards, is_last: Callable[[str], bool]) -> bool:
    """Sharding pays only for a directory of several data files of at least min_bytes."""
    if shards is None or shards.count < 2 or not ck.is_dir:
        return False
    data = [f for rel, f in ck.files.items() if not is_last(rel)]
    return len(data) > 1 and sum(f.size for f in data) >= shards.min_bytes


def sharded_copy(ck: Checkpoint, dst: Place, layout: Layout, transfer: Transfer, tier: str, shards,
                 executor: Executor, is_last: Callable[[str], bool], now: Callable[[], float],
                 log: Callable[[str], None] = lambda m: None) -> CopyResult:
    """The sharded counterpart of copies.copying.copy_checkpoint (same result)."""
    existing = read_copy(dst, layout)
    if existing.complete:
        return CopyResult(existing, False, CopyStats())
    data = [ShardFile(rel, st.path, st.size, ck.place.version(st.path))
            for rel, st in sorted(ck.files.items()) if not is_last(rel)]
    shares = split(data, min(shards.count, len(data)))
    raw = _task(ck, dst, layout, transfer, shares)
    dst.put(task_key(layout), raw)
    job = ShardJob(f"dr-shards-{digest(raw)[:12]}", len(shares),
                   ["-m", MODULE, "--pointer", "{files}/" + POINTER], shards.parallelism, shards.retries,
                   files={POINTER: json.dumps({"copy": absolute(dst), "task": task_key(layout)})})
    log(f"{ck.url}: {len(data)} files in {len(shares)} shards ({executor.__class__.__name__})")
    outcome = executor.run(job)
    if not outcome.ok:
        raise CopyError(f"{ck.url}: {outcome.describe_failures()}; no manifest or marker written (the next "
                        "backup resumes the shards from their journals)")
    digests, stats = verify_results(dst, layout, shares, digest(raw))
    _copy_last(ck, dst, layout, transfer, is_last, digests, stats)
    state = publish_copy(ck, dst, layout, digests, tier, now)
    dst.delete_many(shard_keys(layout, len(shares)))
    return CopyResult(state, True, stats)


def absolute(place: Place) -> dict:
    """The place's location as a shard opens it: a directory by its absolute path."""
    loc = dict(place.location())
    if not place.is_s3:
        loc["url"] = os.path.abspath(loc["url"])
    return loc


def _task(ck: Checkpoint, dst: Place, layout: Layout, transfer: Transfer, shares: list[list[ShardFile]]) -> bytes:
    return task_bytes(
        source=absolute(ck.place), copy=absolute(dst),
        checkpoint={"path": ck.path, "kind": ck.kind, "run": ck.run, "step": ck.step, "url": ck.url},
        layout=layout, shares=shares,
        transfer={"part_size": transfer.part_size, "max_buffer": transfer.max_buffer,
                  "parallel_files": transfer.parallel_files, "server_side": transfer.server_side})


def verify_results(dst: Place, layout: Layout, shares: list[list[ShardFile]], task_sha256: str
                   ) -> tuple[dict[str, str], CopyStats]:
    """Every shard's result against the task, the stored files and their journal entries;
    returns rel -> SHA-256 of every shared file. CopyError names what does not hold."""
    listing = {f.path: f for f in dst.list_files(layout.base)}
    wanted = {f.rel: (f.size, f.version) for share in shares for f in share}
    journaled = completed_files(dst, layout, listing, wanted)
    problems: list[str] = []
    digests: dict[str, str] = {}
    stats = CopyStats()
    for index, share in enumerate(shares):
        result = _result(dst, layout, index, task_sha256, problems)
        if result is None:
            continue
        reported = {f["path"]: (f["size"], f["sha256"]) for f in result.get("files", [])}
        if set(reported) != {f.rel for f in share}:
            problems.append(f"shard {index}: its result lists other files than its share")
            continue
        for f in share:
            size, sha = reported[f.rel]
            if size != f.size:
                problems.append(f"{f.rel}: shard {index} reports {size} bytes, the source has {f.size}")
            elif journaled.get(f.rel) != sha:
                problems.append(f"{f.rel}: not stored with the size and SHA-256 shard {index} reports "
                                "(no matching journal entry)")
            else:
                digests[f.rel] = sha
        stats.files_skipped += int(result.get("skipped", 0))
        stats.bytes_uploaded += int(result.get("bytes_uploaded", 0))
    if problems:
        raise CopyError(f"{dst.url_of(layout.key)}: the shards' results do not verify, no manifest written: "
                        + "; ".join(problems[:SHOWN]) + (f" and {len(problems) - SHOWN} more" if len(problems) > SHOWN else ""))
    stats.files_copied = len(digests) - stats.files_skipped
    stats.bytes_copied = sum(f.size for share in shares for f in share)
    return digests, stats


def _result(dst: Place, layout: Layout, index: int, task_sha256: str, problems: list[str]) -> dict | None:
    key = result_key(layout, index)
    raw = dst.get(key)
    if raw is None:
        problems.append(f"shard {index}: no result at {dst.url_of(key)}")
        return None
    try:
        result = json.loads(raw)
    except ValueError:
        problems.append(f"shard {index}: {dst.url_of(key)} is not JSON")
        return None
    if result.get("format") != RESULT_FORMAT or result.get("index") != index:
        problems.append(f"shard {index}: {dst.url_of(key)} is not shard {index}'s result")
        return None
    if result.get("task") != task_sha256:
        problems.append(f"shard {index}: its result is for another task (an older split of this checkpoint)")
        return None
    return result


def _copy_last(ck: Checkpoint, dst: Place, layout: Layout, transfer: Transfer, is_last: Callable[[str], bool],
               digests: dict[str, str], stats: CopyStats) -> None:
    """The index and marker files, by the coordinator, after every data file is verified."""
    last = [rel for rel in sorted(ck.files) if is_last(rel)]
    if not last:
        return
    listing = {f.path: f for f in dst.list_files(layout.base)}
    wanted = {rel: (ck.files[rel].size, ck.place.version(ck.files[rel].path)) for rel in last}
    done = completed_files(dst, layout, listing, wanted)
    digests.update(done)
    stats.files_skipped += len(done)
    copy_files(ck, dst, layout, transfer, [r for r in last if r not in done], wanted, digests, stats, listing)
