"""The `files` exporter: local directories and files (configuration, small artifacts).

Export walks each configured path without following symlinks. Every regular file, directory
and symlink becomes one artifact, so a restore recreates the tree exactly: empty directories,
modes and nanosecond mtimes included. Identities are `<label>/<relative path>`, the label being
the basename of the configured path: stable when the restoring machine mounts things
elsewhere, and unique because Options rejects two paths with the same basename.

Unchanged files are not read again: the change token is size, mtime, inode and mode (as in
restic); when it equals the previous snapshot's, the sink reuses the stored content.

Restore strips setuid, setgid and sticky bits unless asked to keep them (--keep-special-bits):
a catalog is data anyone with write access to the store could forge, and a restored setuid
root binary is a privilege escalation. Each item whose bits were stripped says so.

SOPS-encrypted files (dr.model.sops): a small YAML, JSON, ENV or INI file whose `sops` metadata
names master keys gets one `sops-key` dependency per key (KMS, age, Vault transit ...), and
restore_needs makes them one any-of need (any key opens the file), so the audit judges where
the keys that decrypt it live. Such a file is read once more, for its metadata (sops_scan).

Restore never writes outside the destination: identities that are absolute or contain '..'
are refused, every parent directory is opened relative to the previous one with O_NOFOLLOW (a
symlink in the destination is never written through), and files are written to a temporary
name in their final directory, then renamed over the old name: nothing is ever half-written.
"""

from __future__ import annotations

import contextlib
import errno
import fnmatch
import hashlib
import io
import os
import secrets
import shutil
import stat
from typing import Callable, Iterator

from pydantic import Field, field_validator

from dr.exporters.contract import (AnyOf, ArtifactSink, ContentReader, Destination, Discovered, Exporter,
                                   ExporterOptions, NoDestination, Outcome, RestoreOption, RestoreRequest,
                                   Rewriter, RunNeeds)
from dr.exporters.contract import OutcomeStatus as Status
from dr.model.artifacts import Artifact, Dependency, Sensitivity
from dr.model.sops import KIND as SOPS_KEY
from dr.model.sops import sops_keys

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK  # a FIFO must not block us
_WRITE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
KINDS = ("file", "directory", "symlink")
SPECIAL_BITS = stat.S_ISUID | stat.S_ISGID | stat.S_ISVTX
KEEP_SPECIAL = "keep-special-bits"  # RestoreRequest.remap key of the restore option
Stat = os.stat_result
SOPS_SUFFIXES = (".yaml", ".yml", ".json", ".env", ".ini")
SOPS_MAX_BYTES = 1 << 20  # SOPS files are configuration: bigger files are not read twice


def label_of(path: str) -> str:
    """The root label of a configured path: its basename (see the module docstring)."""
    return os.path.basename(os.path.normpath(path))


class _Unreadable(Exception):
    """A file vanished or could not be read during the walk: a finding, not a failed source."""

    def __init__(self, path: str, error: OSError):
        super().__init__(f"{path}: {error.strerror or error}")
        self.vanished = error.errno == errno.ENOENT


class _Refused(Exception):
    """A restore item that would leave the destination or write through a symlink."""


class _Guarded(io.BufferedReader):
    """A file the sink reads; read errors become _Unreadable (the sink knows no paths)."""

    def read(self, size: int | None = -1) -> bytes:
        try:
            return super().read(size)
        except OSError as exc:
            raise _Unreadable(self.raw.name, exc) from None


def _opener(path: str) -> Callable[[], _Guarded]:
    """Open lazily (the sink skips unchanged files); refuse what is no longer a regular file."""
    def open_file() -> _Guarded:
        try:
            handle = _Guarded(io.FileIO(path, "rb", opener=lambda name, _: os.open(name, _READ_FLAGS)))
        except OSError as exc:
            raise _Unreadable(path, exc) from None
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            handle.close()
            raise _Unreadable(path, OSError(errno.ENOENT, "replaced by something not a regular file"))
        return handle
    return open_file


def _kind(mode: int) -> str:
    return "file" if stat.S_ISREG(mode) else "directory" if stat.S_ISDIR(mode) else \
        "symlink" if stat.S_ISLNK(mode) else ""


def _mode(st: Stat) -> str:
    return f"{stat.S_IMODE(st.st_mode):04o}"


class FilesExporter(Exporter):
    type_name = "files"
    contract_version = 2
    summary = "Local directories and files, with modes, mtimes, empty directories and symlinks"
    restore_options = (RestoreOption(KEEP_SPECIAL, "", "restore setuid, setgid and sticky bits as the catalog "
                                     "records them (stripped by default)", KEEP_SPECIAL, switch=True),)

    class Options(ExporterOptions):
        #: directories or files; relative ones resolve against the plan's folder
        paths: list[str] = Field(min_length=1)
        #: globs on the path under its root, on <label>/<path>, or (no '/') on a name;
        #: an excluded directory is not entered
        exclude: list[str] = Field(default_factory=list)
        one_file_system: bool = True
        #: read small .yaml/.yml/.json/.env/.ini files for SOPS metadata (the keys that decrypt them)
        sops_scan: bool = True

        @field_validator("paths")
        @classmethod
        def _distinct_labels(cls, paths: list[str]) -> list[str]:
            seen: dict[str, str] = {}
            for path in paths:
                label = label_of(path)
                if label in ("", ".", ".."):
                    raise ValueError(f"{path!r}: its last component must name it (identities start with it)")
                if label in seen:
                    raise ValueError(f"{seen[label]!r} and {path!r} have the same basename {label!r}; "
                                     "identities would collide")
                seen[label] = path
            return paths

    def destinations(self, artifacts: list[Artifact], rewrite: Rewriter) -> list[Destination]:
        """The folder that held the configured paths, when they share one."""
        parents = {os.path.dirname(root) for _, root in self._roots()}
        if len(parents) != 1:
            raise NoDestination(f"its paths are in {len(parents)} folders: name the destination with "
                                f"--to {self.context.source}=DIR")
        return [Destination(artifacts, parents.pop(), "where it came from (the configured paths' folder)")]

    def run_needs(self) -> RunNeeds:
        """Only the configured paths, read; nothing to connect to, no credential."""
        return RunNeeds(paths=[root for _, root in self._roots()])

    # -- walking -------------------------------------------------------------------------
    def _roots(self) -> Iterator[tuple[str, str]]:
        for path in self.options.paths:
            yield label_of(path), os.path.normpath(os.path.join(self.context.base_dir, path))

    def _excluded(self, label: str, rel: str) -> bool:
        name = rel.rsplit("/", 1)[-1]
        return any(fnmatch.fnmatchcase(rel, p) or fnmatch.fnmatchcase(f"{label}/{rel}", p)
                   or ("/" not in p and fnmatch.fnmatchcase(name, p)) for p in self.options.exclude)

    def _walk(self, label: str, root: str) -> Iterator[tuple[str, str, Stat]]:
        """(identity, path, lstat) under root, parents first; never follows a symlink."""
        stack, root_dev = [(label, root, "")], None
        while stack:
            identity, path, rel = stack.pop()
            try:
                st = os.lstat(path)
                root_dev = st.st_dev if root_dev is None else root_dev
                yield identity, path, st
                if not stat.S_ISDIR(st.st_mode):
                    continue
                if self.options.one_file_system and st.st_dev != root_dev:
                    self.context.log(f"files: not crossing into another filesystem at {path}")
                    continue
                names = sorted(os.listdir(path), reverse=True)
            except OSError as exc:
                self._problem(_Unreadable(path, exc), identity, root=not rel)
                continue
            stack.extend((f"{identity}/{name}", os.path.join(path, name), f"{rel}/{name}" if rel else name)
                         for name in names if not self._excluded(label, f"{rel}/{name}" if rel else name))

    def _problem(self, exc: _Unreadable, identity: str, root: bool = False) -> None:
        """A vanished file is churn (warning); a missing root or an unreadable file is lost data."""
        severity, code, what = (
            ("error", "files-path-missing", "configured path missing") if exc.vanished and root
            else ("warning", "files-vanished", "vanished during the backup") if exc.vanished
            else ("error", "files-unreadable", "not backed up"))
        self.context.finding(severity, code, f"{what}: {exc}", identity=identity)

    # -- discover / export ---------------------------------------------------------------
    def discover(self) -> Iterator[Discovered]:
        for label, root in self._roots():
            for identity, _, st in self._walk(label, root):
                kind = _kind(st.st_mode)
                if kind:
                    yield Discovered(kind, identity, f"{st.st_size} bytes" if kind == "file" else "")

    def export(self, sink: ArtifactSink) -> None:
        sensitivity = self.context.sensitivity or Sensitivity.INTERNAL
        for label, root in self._roots():
            for identity, path, st in self._walk(label, root):
                try:
                    self._write(sink, identity, path, st, sensitivity)
                except _Unreadable as exc:
                    self._problem(exc, identity)

    def _write(self, sink: ArtifactSink, identity: str, path: str, st: Stat,
               sensitivity: Sensitivity) -> None:
        kind = _kind(st.st_mode)
        if not kind:
            self.context.finding("info", "files-special-skipped", f"{path}: not a file, directory or symlink",
                                 identity=identity)
            return
        meta: dict = {"mode": _mode(st), "mtime_ns": st.st_mtime_ns}
        content: bytes | Callable[[], _Guarded] = b""
        dependencies: list[Dependency] = []
        if kind == "file":
            meta["size"], content = st.st_size, _opener(path)
            dependencies = self._sops(path, st, meta)
        elif kind == "symlink":
            try:
                meta["target"] = os.readlink(path)
            except OSError as exc:
                raise _Unreadable(path, exc) from None
        sink.write(kind, identity, content, sensitivity=sensitivity, meta=meta, dependencies=dependencies,
                   change_token=f"{st.st_size}:{st.st_mtime_ns}:{st.st_ino}:{st.st_mode}")

    def _sops(self, path: str, st: Stat, meta: dict) -> list[Dependency]:
        """The master keys of a SOPS file (dr.model.sops); meta['sops'] says whether any one opens it."""
        if not self.options.sops_scan or st.st_size > SOPS_MAX_BYTES or not path.endswith(SOPS_SUFFIXES):
            return []
        with _opener(path)() as handle:
            found = sops_keys(handle.read())
        if found is None:
            return []
        meta["sops"] = "any" if found.any_one else "threshold"
        return [Dependency(SOPS_KEY, ref, "a master key of this SOPS file") for ref in found.references]

    def restore_needs(self, artifacts: list[Artifact]) -> list[AnyOf]:
        """A SOPS file opens with any one of its master keys (not with Shamir key groups, whose keys
        are judged one by one). Every such file is declared, one key or several: the kind is
        judged only through these needs."""
        needs = []
        for artifact in artifacts:
            refs = tuple(d.reference for d in artifact.dependencies if d.kind == SOPS_KEY)
            if artifact.meta.get("sops") == "any" and refs:
                needs.append(AnyOf(SOPS_KEY, f"SOPS master key of {artifact.identity}", refs))
        return needs

    # -- restore -------------------------------------------------------------------------
    def restore(self, artifacts: list[Artifact], reader: ContentReader,
                request: RestoreRequest) -> Iterator[Outcome]:
        dest = os.path.abspath(request.to or ".")
        problem = _destination_problem(dest, request)
        if problem:
            yield from (Outcome(a.identity, Status.FAILED, problem) for a in artifacts)
            return
        root = os.open(dest, os.O_RDONLY | os.O_DIRECTORY) if os.path.isdir(dest) else None
        try:
            yield from _Restore(root, dest, reader, request).run(artifacts)
        finally:
            if root is not None:
                os.close(root)


def _destination_problem(dest: str, request: RestoreRequest) -> str:
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
        raise _Refused(f"refused: {identity!r} is absolute or empty")
    parts = identity.split("/")
    if any(p in ("", ".", "..") for p in parts):
        raise _Refused(f"refused: {identity!r} contains '..', '.' or an empty component")
    return parts


class _Restore:
    """One restore into one destination directory, held open as `root` (None: dry run, absent)."""

    def __init__(self, root: int | None, dest: str, reader: ContentReader, request: RestoreRequest):
        self.root, self.dest, self.reader, self.request = root, dest, reader, request
        self.dirs: list[tuple[list[str], Artifact, Outcome]] = []
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
        """Shallow first, so parents exist; directory modes and mtimes last, deepest first."""
        for artifact in sorted(artifacts, key=lambda a: (a.identity.count("/"), a.identity)):
            outcome = self._guarded(artifact, lambda a=artifact: self._one(a))
            if outcome is not None:
                yield outcome
        for parts, artifact, outcome in reversed(self.dirs):
            if outcome.status in (Status.RESTORED, Status.UNCHANGED) and not self.request.dry_run:
                outcome = self._guarded(artifact, lambda p=parts, a=artifact, o=outcome:
                                        self._finish_dir(p, a, o))
            yield outcome

    @staticmethod
    def _guarded(artifact: Artifact, step: Callable[[], Outcome | None]) -> Outcome | None:
        try:
            return step()
        except _Refused as exc:
            return Outcome(artifact.identity, Status.FAILED, str(exc))
        except Exception as exc:  # one item's failure (I/O, integrity, decryption) must not stop the rest
            return Outcome(artifact.identity, Status.FAILED, f"{type(exc).__name__}: {exc}")

    def _one(self, artifact: Artifact) -> Outcome | None:
        parts = _parts(artifact.identity)
        if artifact.kind not in KINDS:
            return Outcome(artifact.identity, Status.SKIPPED, f"unknown kind {artifact.kind!r}")
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
                child = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                child = None if self.request.dry_run else _mkdir_open(part, fd)
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
            if _mode(existing) == mode:
                return Outcome(artifact.identity, Status.UNCHANGED, f"{shown} exists with mode {mode}")
            status, verb = (Status.PLANNED, "would set") if self.request.dry_run else (Status.RESTORED, "set")
            return Outcome(artifact.identity, status,
                           f"{verb} mode {mode} on {shown} (was {_mode(existing)})")
        decided = self._decide(artifact, existing, False, f"directory {shown}")
        if decided:
            return decided
        if existing is not None:
            os.unlink(name, dir_fd=parent)  # overwrite: a file or symlink where a directory belongs
        os.mkdir(name, 0o700, dir_fd=parent)
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
            # rename(2) replaces a symlink at `name` itself; it never follows it
            os.replace(tmp, name, src_dir_fd=parent, dst_dir_fd=parent)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=parent)
            raise
        return Outcome(artifact.identity, Status.RESTORED, f"wrote {what}")

    def _same_file(self, artifact: Artifact, parent: int, name: str, existing: Stat) -> bool:
        """Identical: a regular file with the same mode and content (its digest, else its plaintext)."""
        if not stat.S_ISREG(existing.st_mode) or existing.st_size != artifact.size \
                or stat.S_IMODE(existing.st_mode) != self._mode(artifact):
            return False
        with os.fdopen(os.open(name, _READ_FLAGS, dir_fd=parent), "rb") as handle:
            actual = hashlib.file_digest(handle, "sha256").hexdigest()
        if artifact.digest:
            return actual == artifact.digest
        with self.reader.open(artifact) as stream:  # secret: the catalog holds no plaintext digest
            return actual == hashlib.file_digest(stream, "sha256").hexdigest()

    def _write_file(self, artifact: Artifact, parent: int, tmp: str) -> None:
        with os.fdopen(os.open(tmp, _WRITE_FLAGS, 0o600, dir_fd=parent), "wb") as out, \
                self.reader.open(artifact) as source:
            shutil.copyfileobj(source, out, 1 << 20)  # the reader verifies every chunk and the whole
            out.flush()
            os.fsync(out.fileno())
            os.chmod(out.fileno(), self._mode(artifact))
            os.utime(out.fileno(), ns=(artifact.meta["mtime_ns"],) * 2)


def _mkdir_open(name: str, parent: int) -> int:
    os.mkdir(name, 0o700, dir_fd=parent)
    return os.open(name, _DIR_FLAGS, dir_fd=parent)
