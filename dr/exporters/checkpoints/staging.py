"""A checkpoint restore is written under a staging name and published only when every file verified.

Why: a trainer resumes from the newest step it finds (DCP: a directory holding `.metadata`;
many trainers: the highest `step-N` directory). A tampered DR copy is found out only when
its bad shard is read, after other shards were written; a restore killed half-way stops
anywhere. Neither may leave a step a trainer could pick up.

A directory destination: the checkpoint's files go into `.dr-staging-<name>`, a dot-prefixed
sibling of the final `<name>` (same filesystem, so the rename is atomic; no run_pattern or
trainer takes a dot name for a step), flocked while it is written. When every file verified
it is renamed to `<name>` (an existing one, --overwrite, is swapped out with
RENAME_EXCHANGE, so the step is never missing, then removed). A single-file checkpoint's file
is renamed from the staging directory to its name. A refusal removes the staging directory;
one a killed restore left (its flock died with it) is removed by the next restore of that
checkpoint before it writes, so a left-over is never mistaken for data, nor published.

An S3 destination has no rename: the files are uploaded and verified under the staging
prefix `<parent>/.dr-staging-<name>/`, then copied into place inside the store (CopyObject,
its SHA-256 checked again against the manifest), data files first and index files
(`.metadata`, markers) last, then the staging prefix is deleted. A refusal deletes the
staging prefix and never touches a final key; the next restore of the checkpoint deletes a
killed one's left-over (objects and unfinished multipart uploads). A kill during the copy
into place can leave some data files under their final keys, never an index file before
every data file: DCP loads nothing without `.metadata`.
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from dr.exporters.checkpoints.formats.tree import parent_of
from dr.kits.places.contract import PermanentPlaceError, Place
from dr.kits.places.local import LocalPlace
from dr.kits.places.retrying import RetryingPlace
from dr.exporters.checkpoints.transfer.transferring import FileJob, Transfer

STAGING = ".dr-staging-"
_RENAME_EXCHANGE = 2  # linux/fs.h


def join(prefix: str, rel: str) -> str:
    return f"{prefix}/{rel}" if prefix else rel


@dataclass
class Stage:
    """Where one checkpoint restore writes before it is published.

    dest, prefix: the destination place and the directory the checkpoint's files are relative
    to (the step directory; a single file's run directory). place, root: where the files are
    written (a directory of their own; the staging prefix in the destination bucket)."""

    dest: Place
    prefix: str
    is_dir: bool
    place: Place
    root: str
    _lock: int = -1
    _made: tuple[Path, ...] = ()  # directories open_stage created (removed again on a refusal)
    _published: bool = False

    def target(self, rel: str) -> str:
        return join(self.root, rel)

    def publish(self, files: list[dict], written_last: Callable[[str], bool]) -> None:
        """Every file (the manifest's entries) verified under the staging name: make the
        checkpoint visible."""
        rels = [f["path"] for f in files]
        if self.dest.is_s3:
            self._copy_into_place(files, written_last)
        elif self.is_dir:
            _swap_into_place(self._staging_dir(), self._final_dir())
        else:
            for rel in sorted(rels, key=written_last):
                final = Path(self.dest.url) / join(self.prefix, rel)
                final.parent.mkdir(parents=True, exist_ok=True)
                os.replace(self._staging_dir() / rel, final)
                _fsync_dir(final.parent)
        self._published = True

    def discard(self) -> None:
        """Remove the staging name and what is under it (a refusal; or after publishing)."""
        if self.dest.is_s3:
            _clear_prefix(self.dest, self.root)
            return
        shutil.rmtree(self._staging_dir(), ignore_errors=True)
        if self._lock >= 0:
            os.close(self._lock)
            self._lock = -1
        for made in () if self._published else reversed(self._made):
            try:
                made.rmdir()  # only if still empty: never what someone else put there since
            except OSError:
                break

    def _copy_into_place(self, files: list[dict], written_last: Callable[[str], bool]) -> None:
        transfer = Transfer(self.dest, self.dest, server_side=True)
        try:
            for phase in (False, True):
                jobs = [FileJob(self.target(f["path"]), join(self.prefix, f["path"]), f["size"], sha256=f["sha256"])
                        for f in files if written_last(f["path"]) == phase]
                _, failed = transfer.run(jobs)
                if failed:
                    path, exc = sorted(failed.items())[0]
                    raise PermanentPlaceError(f"copying {path} into place: {exc}")
        finally:
            transfer.close()

    def _staging_dir(self) -> Path:
        return Path(self.place.url)

    def _final_dir(self) -> Path:
        return Path(self.dest.url) / self.prefix


def open_stage(dest: Place, prefix: str, path: str, is_dir: bool) -> Stage:
    """A fresh staging name for the checkpoint at `path` (its path under the destination),
    after removing the left-over of a killed restore of the same checkpoint."""
    name, parent = path.rsplit("/", 1)[-1], parent_of(path)
    root = join(parent, STAGING + name)
    if dest.is_s3:
        _clear_prefix(dest, root)
        return Stage(dest, prefix, is_dir, dest, root)
    staging = Path(dest.url) / root
    _remove_left_over(staging)
    made = tuple(d for d in reversed(staging.parents) if not d.exists())
    staging.mkdir(parents=True)
    lock = os.open(staging, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    return Stage(dest, prefix, is_dir, RetryingPlace(LocalPlace(staging)), "", lock, made)


def _remove_left_over(staging: Path) -> None:
    """A staging directory nobody holds is a killed restore's: remove it. One that is held is
    another restore's, writing the same checkpoint now: refuse rather than race it."""
    try:
        fd = os.open(staging, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        return
    except OSError:  # not a directory (a file, a symlink): nothing of ours, but in the way
        staging.unlink()
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        raise PermanentPlaceError(f"{staging}: another restore is writing this checkpoint now") from None
    finally:
        os.close(fd)
    shutil.rmtree(staging)


def _clear_prefix(place: Place, root: str) -> None:
    for upload in place.pending_uploads(root + "/"):
        place.abort(upload)
    place.delete_many([f.path for f in place.list_files(root)])


def _swap_into_place(staging: Path, final: Path) -> None:
    """Rename `staging` to `final` atomically; an existing `final` is exchanged with it (so the
    staging name then holds the old checkpoint, removed by discard())."""
    final.parent.mkdir(parents=True, exist_ok=True)
    if final.exists() or final.is_symlink():
        _exchange(staging, final)
    else:
        os.rename(staging, final)
    _fsync_dir(final.parent)


def _exchange(a: Path, b: Path) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    at_fdcwd = -100
    if libc.renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return
    code = ctypes.get_errno()
    if code not in (errno.EINVAL, errno.ENOSYS):
        raise OSError(code, os.strerror(code), str(b))
    aside = b.with_name(f"{STAGING}old-{b.name}")  # no exchange here: a moment without the step
    shutil.rmtree(aside, ignore_errors=True)
    os.rename(b, aside)
    os.rename(a, b)
    os.rename(aside, a)


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
