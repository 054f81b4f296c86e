"""The `files` exporter's plugin: options, the walk without following symlinks, export with
change tokens, SOPS key dependencies; restore() hands over to dr.exporters.files.restoring.
The rules are in the package docstring."""

from __future__ import annotations

import contextlib
import errno
import fnmatch
import io
import os
import stat
from types import MappingProxyType
from typing import Callable, Iterator

from pydantic import Field, field_validator

from dr.contract import (AnyOf, ArtifactSink, AuditDeclarations, ContentReader, DeployNeeds, Destination, Discovered,
                         DrillComparison, Exporter, ExporterOptions, NoDestination, Outcome, OutsideCopies, Planning,
                         RestoreOption, RestoreRequest, RestoredContent, Rewriter, RunNeeds, Sizing)
from dr.contract import OutcomeStatus as Status
from dr.model.artifacts import Artifact, Dependency, Sensitivity
from dr.exporters.files.sops import KEY_LOST, sops_keys
from dr.exporters.files.sops import KIND as SOPS_KEY

DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK  # a FIFO must not block us
WRITE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
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
            handle = _Guarded(io.FileIO(path, "rb", opener=lambda name, _: os.open(name, READ_FLAGS)))
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


def mode_text(st: Stat) -> str:
    return f"{stat.S_IMODE(st.st_mode):04o}"


class FilesExporter(Exporter, Planning, AuditDeclarations, OutsideCopies, DeployNeeds, DrillComparison):
    type_name = "files"
    contract_version = 2
    sizing = Sizing(162, "Backup of a directory to S3: dr vs restic, first backup of 1 GiB")
    finding_codes = (KEY_LOST,)
    lost_kind_codes = MappingProxyType({SOPS_KEY: KEY_LOST.code})
    summary = "Local directories and files, with modes, mtimes, empty directories and symlinks"
    restore_options = (RestoreOption(KEEP_SPECIAL, "", "restore setuid, setgid and sticky bits as the catalog "
                                     "records them (stripped by default)", KEEP_SPECIAL, switch=True),)

    class Options(ExporterOptions):
        #: directories or files; relative ones resolve against the plan's folder
        paths: list[str] = Field(min_length=1)
        #: globs on the path under its root, on <label>/<path>, or (no '/') on a name;
        #: an excluded directory is not entered
        exclude: list[str] = Field(default_factory=list)
        #: do not descend into directories on another filesystem (mounts under a path)
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

    def plan_copy(self, artifact: Artifact, plan_path: str) -> tuple[str, str] | None:
        """The plan's own file, written (so not excluded) under one of the configured paths."""
        if artifact.kind != "file":
            return None
        known = self.__dict__.setdefault("_plan_identities", {})  # asked once per file written: resolve once
        if plan_path not in known:
            known[plan_path] = self._identity_of(plan_path)
        return ("the plan's file", artifact.identity) if artifact.identity == known[plan_path] else None

    def _identity_of(self, path: str) -> str | None:
        """The identity a file at `path` (a real path) gets, when a configured path is it or holds it."""
        for label, root in self._roots():
            root = os.path.realpath(root)
            if path == root:
                return label
            if path.startswith(root.rstrip(os.sep) + os.sep):
                return f"{label}/{os.path.relpath(path, root)}"
        return None

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
        meta: dict = {"mode": mode_text(st), "mtime_ns": st.st_mtime_ns}
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
        """The master keys of a SOPS file (dr.exporters.files.sops); meta['sops'] says whether any one opens it."""
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
    def check_artifacts(self, artifacts: list[Artifact]) -> list[str]:
        """The catalog facts restore() refuses as damage (identities that leave the destination,
        modes, times, link targets), so that dr verify finds them first."""
        from dr.exporters.files.restoring import catalog_problems

        return catalog_problems(artifacts)

    def restored_content(self, artifacts: list[Artifact], reader: ContentReader,
                         request: RestoreRequest) -> Iterator[RestoredContent]:
        """Each file by its path under the destination (dr compares its digest); a symlink by its
        target, a directory by being one; identities that leave the destination are not named."""
        from dr.exporters.files.restoring import restored_contents

        return restored_contents(artifacts, os.path.abspath(request.to or "."))

    def restore(self, artifacts: list[Artifact], reader: ContentReader,
                request: RestoreRequest) -> Iterator[Outcome]:
        # imported here, not at the top: a backup never loads the restore side
        from dr.exporters.files.restoring import Restore, destination_problem

        dest = os.path.abspath(request.to or ".")
        existed = os.path.isdir(dest)
        problem = destination_problem(dest, request)
        if problem:
            yield from (Outcome(a.identity, Status.FAILED, problem) for a in artifacts)
            return
        root = os.open(dest, os.O_RDONLY | os.O_DIRECTORY) if os.path.isdir(dest) else None
        failed = False
        try:
            for outcome in Restore(root, dest, reader, request).run(artifacts):
                failed |= outcome.status == Status.FAILED
                yield outcome
        finally:
            if root is not None:
                os.close(root)
        if failed and not existed:  # a refused restore leaves no trace, not even the --to it made
            with contextlib.suppress(OSError):  # only if empty
                os.rmdir(dest)
