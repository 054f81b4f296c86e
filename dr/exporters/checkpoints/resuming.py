"""Can a training run continue from this checkpoint, or only serve from it? (check 1 of
docs/readiness.md)

Why: a checkpoint that holds the weights but not the optimizer state restores and serves, but
a training run restarted from it loses its Adam moments, its LR schedule position, its step,
its RNG streams and its place in the data: the loss spikes, the schedule restarts, samples
are seen twice. That is found out after the failure, when it is too late; the index says it
on every backup.

Parts are recognised by name in the saved state's key paths: each entry belongs to the part
its OUTERMOST matching path component names (so Adam's per-parameter `optim.state.0.step`
is optimizer state, not the training step, while `extra.step` is the step). Tensors that no
part claims are weights (a bare model state_dict, a safetensors file of tensors).
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from dr.exporters.checkpoints.formats.contents import Contents, read_contents

if TYPE_CHECKING:
    from dr.exporters.checkpoints.scanning import Checkpoint

#: part -> globs matched against one path component (lower-cased); plans add or replace parts
PARTS: dict[str, tuple[str, ...]] = {
    "model": ("model", "model_*", "module", "state_dict", "weights", "params", "net", "network"),
    "optimizer": ("optim", "optimizer*", "optim_*", "opt_state*", "optimizers"),
    "lr_scheduler": ("lr_scheduler*", "scheduler*", "lr_schedulers", "sched"),
    "step": ("step", "global_step", "steps", "epoch", "iteration", "iter", "train_step", "trainer_state",
             "num_steps"),
    "rng": ("rng", "rng_state*", "rng_states", "*_rng_state", "random_state*", "*rng*"),
    "dataloader": ("dataloader*", "data_loader*", "sampler*", "*_sampler", "dataset_state", "data_state"),
    "scaler": ("scaler", "grad_scaler", "amp", "amp_scaler", "*_scaler"),
}
#: what a training run needs to continue, unless the plan says otherwise (the scaler only
#: matters for fp16 mixed precision, so it is recognised but not required)
DEFAULT_REQUIRES = ("model", "optimizer", "lr_scheduler", "step", "rng", "dataloader")
#: version field -> globs matched against the last component of a value's path
VERSION_FIELDS: dict[str, tuple[str, ...]] = {
    "code": ("git_sha", "git_commit", "git_hash", "git_rev*", "commit", "commit_sha", "code_version"),
    "image": ("image", "image_digest", "image_ref", "container_image"),
    "config": ("config_hash", "config_sha*", "config_digest", "cfg_hash", "config_version"),
    "data": ("data_version", "dataset_version", "data_hash", "dataset_hash", "dataset_sha*", "data_sha*"),
}
RESUMABLE, SERVES_ONLY, NO_WEIGHTS, RELEASE = ("resumable", "serves, cannot resume", "cannot resume or serve",
                                               "model release")


def version_field(path: tuple[str, ...]) -> str | None:
    last = path[-1].lower() if path else ""
    return next((name for name, globs in VERSION_FIELDS.items() if _any(last, globs)), None)


@dataclass
class Resumability:
    role: str  # training | release
    requires: tuple[str, ...]
    found: dict[str, int]  # part -> entries
    versions: dict[str, str]  # version field -> value
    problems: list[str] = field(default_factory=list)

    @property
    def missing(self) -> list[str]:
        return [p for p in self.requires if not self.found.get(p)] if self.role == "training" else []

    @property
    def unversioned(self) -> list[str]:
        return [f for f in VERSION_FIELDS if f not in self.versions]

    @property
    def verdict(self) -> str:
        if self.role == "release":
            return RELEASE
        if not self.missing:
            return RESUMABLE
        return SERVES_ONLY if self.found.get("model") else NO_WEIGHTS

    def to_meta(self) -> dict:
        """What the copy's record keeps (artifact meta `resume`), for reports."""
        out = {"verdict": self.verdict, "role": self.role, "parts": dict(sorted(self.found.items())),
               "missing": self.missing, "versions": dict(sorted(self.versions.items())),
               "unversioned": self.unversioned}
        if self.problems:
            out["unread"] = self.problems[:5]
        return out


def judge(contents: Contents, role: str, requires: tuple[str, ...],
          parts: dict[str, tuple[str, ...]] = PARTS) -> Resumability:
    found: dict[str, int] = {}
    for path, tensor in contents.entries:
        part = _part_of(path, parts)
        if part is None and tensor:
            part = "model"  # weights no part names: a bare state_dict, a safetensors file
        if part is not None:
            found[part] = found.get(part, 0) + 1
    versions: dict[str, str] = {}
    for path, text in contents.values.items():
        name = version_field(path)
        if name is not None and text and name not in versions:
            versions[name] = text[:200]
    return Resumability(role, requires, found, versions, list(contents.problems))


def _part_of(path: tuple[str, ...], parts: dict[str, tuple[str, ...]]) -> str | None:
    for component in path:
        low = component.lower()
        for name, globs in parts.items():
            if _any(low, globs):
                return name
    return None


def _any(name: str, globs: tuple[str, ...]) -> bool:
    return any(fnmatch.fnmatchcase(name, g) for g in globs)


def of_checkpoint(ck: "Checkpoint", role: str, requires: tuple[str, ...],
                  parts: dict[str, tuple[str, ...]] = PARTS) -> Resumability:
    """Judge one complete checkpoint from its settled listing and the indexes already read."""
    contents = read_contents(ck.place, ck.kind, ck.files, ck.indexes, lambda p: version_field(p) is not None)
    return judge(contents, role, requires, parts)
