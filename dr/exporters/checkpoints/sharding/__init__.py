"""Sharded checkpoint copies: one copy's files split across N shard processes or pods.

Why: one pod's network and CPU bound how fast a checkpoint of hundreds of GB reaches the DR
site. With the source's `shards` option, the backup (the coordinator) splits a checkpoint's
data files across N shards by size, runs them as an Indexed Job of dr's own image (or as N
local processes), verifies each shard's result, and only then writes the copy's manifest
and marker, once. The copy it leaves is the same as an unsharded one (docs/format.md 19).

- executors.py     ShardJob, ShardOutcome, the Executor interface, LocalExecutor (processes).
- kubernetes.py    KubernetesExecutor: a batch/v1 Job, completionMode Indexed, watched.
- tasks.py         the shard plan and the per-shard result objects beside the copy; the split.
- coordinating.py  the coordinator: split, run, verify, publish.
- shard.py         one shard's work (`python -m dr.exporters.checkpoints.sharding`).

The executors know nothing of checkpoints; they would serve image copies the same way.
"""

from __future__ import annotations

from dr.exporters.checkpoints.sharding.executors import Executor, LocalExecutor, ShardJob, ShardOutcome

__all__ = ["Executor", "LocalExecutor", "ShardJob", "ShardOutcome", "make_executor"]


def make_executor(shards, base_dir: str) -> Executor:
    """The executor the plan's `shards.executor` names."""
    if shards is not None and shards.executor == "kubernetes":
        from dr.exporters.checkpoints.sharding.kubernetes import KubernetesExecutor  # the client is heavy

        return KubernetesExecutor.from_options(shards.kubernetes, base_dir)
    return LocalExecutor()
