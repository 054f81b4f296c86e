"""The `files` restore: one destination directory, written without leaving it.

Identities that are absolute or contain '..' are refused; every parent directory is opened
relative to the previous one with O_NOFOLLOW; setuid, setgid and sticky bits are stripped
unless the request keeps them (dr.exporters.files, the package docstring).

All or nothing: every file and symlink is first written to a staging name in its final
directory (`.dr-restore-<random>.tmp`, dot-prefixed, fsynced; a file's bytes verified by the
reader as they are read), and only when every item of the restore succeeded are they renamed
over their names, one rename each. If any item fails (a damaged or undecryptable blob, a
symlink in the way), nothing is renamed: the staging files and the directories this restore
created are removed, a file that stood where a directory belongs (--overwrite) and was set
aside under a staging name is put back, and the destination is as it was; every item says so. A killed restore
leaves only staging files (and new directories), which the next restore removes from each
directory it writes to; a file under its own name is always whole.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import secrets
import shutil
import stat
from typing import Callable, Iterator

from dr.contract import ContentReader, Outcome, RestoredContent, RestoreRequest
from dr.contract import OutcomeStatus as Status
from dr.exporters.files.exporter import (DIR_FLAGS, KEEP_SPECIAL, KINDS, READ_FLAGS, SPECIAL_BITS, WRITE_FLAGS, Stat,
                                         mode_text)
from dr.model.artifacts import Artifact


class _Damaged(Exception):
    """What the catalog says of an item is damaged or hostile: the item is refused as damage."""


class _Refused(Exception):
    """A restore item that would leave the destination or write through a symlink."""


def destination_problem(dest: str, request: RestoreRequest) -> str:
    if not request.to:
        return "restoring files needs a destination directory (--to)"
    if os.path.exists(dest) and not os.path.isdir(dest):
        return f"destination {dest} is not a directory"
    try:
        if not request.dry_run:
            os.makedirs(dest, exist_ok=True)
    except OSError as exc:
        return f"cannot create destination {dest}: {exc.strerror}"
    return ""


def _parts(identity: str) -> list[str]:
    """The components of a safe identity; refuse anything that could name a path outside."""
    if not identity or "\0" in identity or os.path.isabs(identity):
        raise _Damaged(f"refused: field 'identity' {identity!r:.200} is absolute or empty: the catalog is "
                       "damaged or hostile")
    parts = identity.split("/")
    if any(p in ("", ".", "..") for p in parts):
        raise _Damaged(f"refused: field 'identity' {identity!r:.200} contains '..', '.' or an empty component: "
                       "the catalog is damaged or hostile")
    return parts


def _check_meta(artifact: Artifact) -> None:
    """The catalog facts a restore acts on, as the exporter writes them (exporter.py: _artifact):
    anything else is refused as damage, not met later as an exception deep in os calls."""
    meta = artifact.meta
    mode, mtime = meta.get("mode"), meta.get("mtime_ns")
    if not (isinstance(mode, str) and len(mode) <= 6 and mode.isdigit() and set(mode) <= set("01234567")):
        raise _Damaged(f"refused: field 'meta.mode' is {mode!r:.60}, not an octal mode: the catalog is damaged or hostile")
    if type(mtime) is not int or not 0 <= mtime < 1 << 63:
        raise _Damaged(f"refused: field 'meta.mtime_ns' is {mtime!r:.60}, not nanoseconds since the epoch: the "
                       "catalog is damaged or hostile")
    target = meta.get("target", "")
    if not isinstance(target, str) or "\0" in target or (artifact.kind == "symlink" and not target):
        raise _Damaged(f"refused: field 'meta.target' is {target!r:.60}, not a symlink target: the catalog is "
                       "damaged or hostile")


class Restore:
    """One restore into one destination directory, held open as `root` (None: dry run, absent)."""

    def __init__(self, root: int | None, dest: str, reader: ContentReader, request: RestoreRequest):
        self.root, self.dest, self.reader, self.request = root, dest, reader, request
        self.dirs: list[tuple[list[str], Artifact, Outcome]] = []
        self.staged: list[tuple[list[str], str]] = []  # (the item's path parts, its staging name)
        self.made: list[list[str]] = []  # directories this restore created, parents first
        self.aside: list[tuple[list[str], str]] = []  # (a directory's parts, what was at its name, renamed)
        self.keep_special = request.remap.get(KEEP_SPECIAL) == "true"

    def _mode(self, artifact: Artifact) -> int:
        """The mode to restore: the catalog's, without setuid/setgid/sticky unless asked to keep them."""
        mode = int(artifact.meta["mode"], 8)
        return mode if self.keep_special else mode & ~SPECIAL_BITS

    def _stripped(self, artifact: Artifact, outcome: Outcome) -> Outcome:
        """Say in the item's outcome that special bits were not restored."""
        recorded = int(artifact.meta["mode"], 8)
        if self.keep_special or not recorded & SPECIAL_BITS or outcome.status in (Status.FAILED, Status.CONFLICT):
            return outcome
        names = [n for bit, n in ((stat.S_ISUID, "setuid"), (stat.S_ISGID, "setgid"), (stat.S_ISVTX, "sticky"))
                 if recorded & bit]
        outcome.reason += (f"; {'/'.join(names)} bits of mode {recorded:04o} stripped (mode "
                           f"{self._mode(artifact):04o}; --keep-special-bits keeps them)")
        return outcome

    def run(self, artifacts: list[Artifact]) -> Iterator[Outcome]:
        """Shallow first, so parents exist; renames into place only when nothing failed;
        directory modes and mtimes last, deepest first."""
        held = []
        for artifact in sorted(artifacts, key=lambda a: (a.identity.count("/"), a.identity)):
            outcome = self._guarded(artifact, lambda a=artifact: self._one(a))
            if outcome is not None:
                held.append(outcome)
        failed = [o.item for o in held + [d[2] for d in self.dirs] if o.status == Status.FAILED]
        if failed:
            yield from self._abandon(held + [o for _, _, o in reversed(self.dirs)], failed)
            return
        yield from held  # nothing is renamed before every item was written: see _commit
        self._commit()
        for parts, artifact, outcome in reversed(self.dirs):
            if outcome.status in (Status.RESTORED, Status.UNCHANGED) and not self.request.dry_run:
                outcome = self._guarded(artifact, lambda p=parts, a=artifact, o=outcome:
                                        self._finish_dir(p, a, o))
            yield outcome

    def _commit(self) -> None:
        """Rename each staged item over its name; what was set aside for a directory goes."""
        for parts, tmp in self.staged:  # rename(2) replaces a symlink at the name itself, never follows it
            self._in_parent(parts, lambda fd, p=parts, t=tmp: os.replace(t, p[-1], src_dir_fd=fd, dst_dir_fd=fd))
        for parts, aside in self.aside:
            self._in_parent(parts, lambda fd, a=aside: os.unlink(a, dir_fd=fd))

    def _abandon(self, outcomes: list[Outcome], failed: list[str]) -> Iterator[Outcome]:
        """A failed item: remove every staging file and created directory, put back what was
        set aside for a directory, and say so."""
        for parts, tmp in self.staged:
            with contextlib.suppress(OSError):
                self._in_parent(parts, lambda fd, t=tmp: os.unlink(t, dir_fd=fd))
        for parts in list(reversed(self.made)):
            with contextlib.suppress(OSError):  # not empty: something not ours is in it now
                self._in_parent(parts, lambda fd, p=parts: os.rmdir(p[-1], dir_fd=fd))
        for parts, aside in self.aside:
            with contextlib.suppress(OSError):
                self._in_parent(parts, lambda fd, p=parts, a=aside: os.rename(a, p[-1], src_dir_fd=fd,
                                                                               dst_dir_fd=fd))
        why = (f"not restored: {len(failed)} item(s) of this restore failed ({', '.join(failed[:3])}), "
               f"so nothing was written under its own name in {self.dest}")
        for outcome in outcomes:
            yield Outcome(outcome.item, Status.FAILED, why) if outcome.status == Status.RESTORED else outcome

    def _in_parent(self, parts: list[str], step: Callable[[int], None]) -> None:
        """step(fd of the item's parent directory), opened without following symlinks."""
        parent = self._open_dir(parts[:-1])
        try:
            step(parent)
        finally:
            if parent != self.root:
                os.close(parent)

    @staticmethod
    def _guarded(artifact: Artifact, step: Callable[[], Outcome | None]) -> Outcome | None:
        try:
            return step()
        except _Damaged as exc:
            return Outcome(artifact.identity, Status.FAILED, str(exc), damaged=True)
        except _Refused as exc:
            return Outcome(artifact.identity, Status.FAILED, str(exc))
        except Exception as exc:  # one item's failure (I/O, integrity, decryption) must not stop the rest
            return Outcome(artifact.identity, Status.FAILED, f"{type(exc).__name__}: {exc}")

    def _one(self, artifact: Artifact) -> Outcome | None:
        parts = _parts(artifact.identity)
        if artifact.kind not in KINDS:
            return Outcome(artifact.identity, Status.SKIPPED, f"unknown kind {artifact.kind!r}")
        _check_meta(artifact)
        parent = self._open_dir(parts[:-1])
        self._sweep(parent, "/".join(parts[:-1]))
        try:
            existing = None
            with contextlib.suppress(FileNotFoundError):
                if parent is not None:
                    existing = os.stat(parts[-1], dir_fd=parent, follow_symlinks=False)
            if artifact.kind == "directory":
                outcome = self._stripped(artifact, self._dir(artifact, parent, parts[-1], existing))
                self.dirs.append((parts, artifact, outcome))
                return None
            outcome = self._leaf(artifact, parent, parts[-1], existing)
            return self._stripped(artifact, outcome) if artifact.kind == "file" else outcome
        finally:
            if parent is not None and parent != self.root:
                os.close(parent)

    def _sweep(self, parent: int | None, where: str) -> None:
        """Remove temporary files a killed earlier restore left in this directory (once each)."""
        swept = self.__dict__.setdefault("_swept", set())
        if parent is None or self.request.dry_run or where in swept:
            return
        swept.add(where)
        for name in os.listdir(parent):
            if name.startswith(".dr-restore-") and name.endswith(".tmp"):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(name, dir_fd=parent)

    def _open_dir(self, parts: list[str]) -> int | None:
        """dest/parts opened component by component, never via a symlink; missing ones are created
        (dry run: None, "nothing exists from here")."""
        fd = self.root
        for i, part in enumerate(parts):
            if fd is None:
                return None
            try:
                child = os.open(part, DIR_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                child = None if self.request.dry_run else _mkdir_open(part, fd)
                if child is not None:
                    self.made.append(parts[:i + 1])
            except OSError:
                where = os.path.join(self.dest, *parts[:i + 1])
                what = "a symlink" if os.path.islink(where) else "not a directory"
                raise _Refused(f"refused: {where} is {what} in the destination; "
                               "nothing is written through it")
            finally:
                if fd != self.root:
                    os.close(fd)
            fd = child
        return fd

    def _show(self, artifact: Artifact) -> str:
        return os.path.join(self.dest, artifact.identity)

    def _decide(self, artifact: Artifact, existing: Stat | None, same: bool,
                what: str) -> Outcome | None:
        """The outcome known before writing, or None when the item must be written."""
        item, shown = artifact.identity, self._show(artifact)
        if existing is not None and stat.S_ISDIR(existing.st_mode):
            return Outcome(item, Status.CONFLICT, f"{shown} is a directory; it is never replaced")
        if existing is not None and same:
            return Outcome(item, Status.UNCHANGED, f"{shown} is already identical")
        if existing is not None and not self.request.overwrite:
            return Outcome(item, Status.CONFLICT, f"{shown} exists and differs; restore with --overwrite")
        if self.request.dry_run:
            return Outcome(item, Status.PLANNED, f"would {'replace' if existing else 'create'} {what}")
        return None

    def _dir(self, artifact: Artifact, parent: int | None, name: str, existing: Stat | None) -> Outcome:
        """Directories merge: a retry after a partial restore converges without overwrite."""
        shown, mode = self._show(artifact), f"{self._mode(artifact):04o}"
        if existing is not None and stat.S_ISDIR(existing.st_mode):
            if mode_text(existing) == mode:
                return Outcome(artifact.identity, Status.UNCHANGED, f"{shown} exists with mode {mode}")
            status, verb = (Status.PLANNED, "would set") if self.request.dry_run else (Status.RESTORED, "set")
            return Outcome(artifact.identity, status,
                           f"{verb} mode {mode} on {shown} (was {mode_text(existing)})")
        decided = self._decide(artifact, existing, False, f"directory {shown}")
        if decided:
            return decided
        parts = _parts(artifact.identity)
        if existing is not None:  # overwrite: a file or symlink where a directory belongs, kept aside
            aside = f".dr-restore-{secrets.token_hex(8)}.tmp"  # until the restore is committed
            os.rename(name, aside, src_dir_fd=parent, dst_dir_fd=parent)
            self.aside.append((parts, aside))
        os.mkdir(name, 0o700, dir_fd=parent)
        self.made.append(parts)
        return Outcome(artifact.identity, Status.RESTORED, f"created directory {shown}")

    def _finish_dir(self, parts: list[str], artifact: Artifact, outcome: Outcome) -> Outcome:
        fd = self._open_dir(parts)
        try:
            os.chmod(fd, self._mode(artifact))
            os.utime(fd, ns=(artifact.meta["mtime_ns"],) * 2)
        finally:
            os.close(fd)
        return outcome

    def _leaf(self, artifact: Artifact, parent: int | None, name: str, existing: Stat | None) -> Outcome:
        target = artifact.meta.get("target", "")
        if artifact.kind == "symlink":
            same = (existing is not None and stat.S_ISLNK(existing.st_mode)
                    and os.readlink(name, dir_fd=parent) == target)
            what = f"symlink {self._show(artifact)} -> {target}"
        else:
            same = existing is not None and self._same_file(artifact, parent, name, existing)
            what = f"{artifact.size} bytes at {self._show(artifact)}"
        decided = self._decide(artifact, existing, same, what)
        if decided:
            return decided
        tmp = f".dr-restore-{secrets.token_hex(8)}.tmp"
        try:
            if artifact.kind == "symlink":
                os.symlink(target, tmp, dir_fd=parent)
                os.utime(tmp, ns=(artifact.meta["mtime_ns"],) * 2, dir_fd=parent, follow_symlinks=False)
            else:
                self._write_file(artifact, parent, tmp)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=parent)
            raise
        self.staged.append((_parts(artifact.identity), tmp))
        return Outcome(artifact.identity, Status.RESTORED, f"wrote {what}")

    def _same_file(self, artifact: Artifact, parent: int, name: str, existing: Stat) -> bool:
        """Identical: a regular file with the same mode and content (its digest, else its plaintext)."""
        if not stat.S_ISREG(existing.st_mode) or existing.st_size != artifact.size \
                or stat.S_IMODE(existing.st_mode) != self._mode(artifact):
            return False
        with os.fdopen(os.open(name, READ_FLAGS, dir_fd=parent), "rb") as handle:
            actual = hashlib.file_digest(handle, "sha256").hexdigest()
        if artifact.digest:
            return actual == artifact.digest
        with self.reader.open(artifact) as stream:  # secret: the catalog holds no plaintext digest
            return actual == hashlib.file_digest(stream, "sha256").hexdigest()

    def _write_file(self, artifact: Artifact, parent: int, tmp: str) -> None:
        with os.fdopen(os.open(tmp, WRITE_FLAGS, 0o600, dir_fd=parent), "wb") as out, \
                self.reader.open(artifact) as source:
            shutil.copyfileobj(source, out, 1 << 20)  # the reader verifies every chunk and the whole
            out.flush()
            os.fsync(out.fileno())
            os.chmod(out.fileno(), self._mode(artifact))
            os.utime(out.fileno(), ns=(artifact.meta["mtime_ns"],) * 2)


def _mkdir_open(name: str, parent: int) -> int:
    os.mkdir(name, 0o700, dir_fd=parent)
    return os.open(name, DIR_FLAGS, dir_fd=parent)


def catalog_problems(artifacts: list[Artifact]) -> list[str]:
    """What a restore would refuse as damage in these catalog entries (Exporter.check_artifacts)."""
    problems = []
    for artifact in artifacts:
        try:
            _parts(artifact.identity)
            if artifact.kind in KINDS:
                _check_meta(artifact)
        except _Damaged as exc:
            problems.append(f"{artifact.identity!r:.200}: {exc}")
    return problems


def restored_contents(artifacts: list[Artifact], dest: str) -> Iterator[RestoredContent]:
    """What `dest` holds of each artifact (Exporter.restored_content)."""
    for artifact in artifacts:
        try:
            path = os.path.join(dest, *_parts(artifact.identity))
        except _Damaged:  # refused by the restore too: it is that step's failure, not a mismatch
            continue
        if artifact.kind == "file":
            yield RestoredContent(artifact.identity, path=path)
        elif artifact.kind == "symlink":
            target = os.readlink(path) if os.path.islink(path) else ""
            yield RestoredContent(artifact.identity, restored=target and f"symlink to {target}",
                                  backed_up=f"symlink to {artifact.meta.get('target', '')}")
        elif artifact.kind == "directory":
            there = os.path.isdir(path) and not os.path.islink(path)
            yield RestoredContent(artifact.identity, restored="directory" if there else "", backed_up="directory")
