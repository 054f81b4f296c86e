"""A directory as a place (the contract: contract.py): a checkpoint tree, a copy source and target.

Why one contract for directories and S3 (s3.py): a trainer writes to a shared filesystem or
to a bucket, and the DR copy goes to a bucket or a mounted directory in another failure
domain; the copier, the completeness checks and restore should not care which.

Local writes are atomic: a temporary file in the final directory, fsynced, then renamed
(create-only puts link instead, which fails if the name is taken); a crash leaves only a
`.dr-partial-*` file, which listings skip. With a staging directory (`staging="tmp"`, the
repository's local store: docs/format.md) a put's temporary file is written there instead,
under a random name, and linked or renamed into place from it: a crash leaves a file under
the staging directory only, which is never listed, and pending_uploads('') offers for abort.

Errors: a missing file is PlaceMissing; the errors a network filesystem gives while a server
is away (ESTALE, ETIMEDOUT, EAGAIN, EINTR, connection resets) are transient; every other
OSError (access denied, no space, a symlink where a file was) is permanent.
"""

from __future__ import annotations

import errno
import fcntl
import os
import secrets
import stat as stat_mod
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from dr.kits.places.bodies import fill
from dr.kits.places.files import check_relative_path
from dr.kits.places.files import FileStat, LocalTree
from dr.kits.places.contract import (PermanentPlaceError, Place, PlaceError, PlaceMissing, Retention,
                                    SourceChanged, TransientPlaceError, Upload)
from dr.kits.syncing import fsync_all

PARTIAL = ".dr-partial-"
RESUMABLE = "resume"  # the suffix of a copy's partial file, kept across runs to resume from
_TRANSIENT_ERRNOS = frozenset({errno.ESTALE, errno.ETIMEDOUT, errno.EAGAIN, errno.EINTR, errno.ECONNRESET,
                               errno.ECONNABORTED, errno.EHOSTUNREACH, errno.ENETUNREACH})


class LocalPlace(Place):
    """A directory. Symlinks are never followed (see LocalTree)."""

    is_s3 = False

    def __init__(self, root: str | os.PathLike[str], staging: str | None = None) -> None:
        self.root = Path(root)
        self._tree = LocalTree(self.root)
        self.staging = check_relative_path(staging) if staging else None
        # Nothing is created until the first put: a reader pointed at a missing directory
        # leaves no trace.

    def __repr__(self) -> str:
        return f"LocalPlace({str(self.root)!r})"

    @property
    def url(self) -> str:
        return str(self.root)

    def url_of(self, path: str) -> str:
        return str(self._abs(path))

    def location(self) -> dict:
        return {"url": str(self.root)}

    def _abs(self, path: str) -> Path:
        return self.root / check_relative_path(path) if path else self.root

    # -- FileTree ---------------------------------------------------------------------------
    def list_files(self, prefix: str = "") -> Iterator[FileStat]:
        with local_errors(self.url_of(prefix)):
            if not self._abs(prefix).is_dir():
                return
            hidden = f"{self.staging}/" if self.staging else None
            for f in self._tree.list_files(prefix):
                if PARTIAL not in f.name and not (hidden and f.path.startswith(hidden)):
                    yield f

    def read(self, path: str, start: int, length: int) -> bytes:
        with local_errors(self.url_of(path)):
            return self._tree.read(path, start, length)

    def version(self, path: str) -> str:
        """Size and mtime, read now (a file changed after the listing is caught by the
        reader, which compares the file with the listing's FileStat)."""
        head = self.head(path)
        return head[1] if head else ""

    # -- streaming reads --------------------------------------------------------------------
    def open_read(self, path: str, expect: FileStat | None = None, offset: int = 0) -> "LocalReader":
        """A sequential reader from `offset`; SourceChanged if the file's size or mtime differ
        from `expect` when opened or when closed."""
        return LocalReader(self._abs(path), path, expect, offset)

    # -- small objects ----------------------------------------------------------------------
    def get(self, path: str) -> bytes | None:
        with local_errors(self.url_of(path)):
            try:
                fd = os.open(self._abs(path), os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
            except FileNotFoundError:
                return None
            with os.fdopen(fd, "rb") as f:
                try:
                    return f.read()
                except IsADirectoryError:
                    return None  # a directory is not a file

    def head(self, path: str) -> tuple[int, str, str] | None:
        with local_errors(self.url_of(path)):
            try:
                st = os.lstat(self._abs(path))
            except FileNotFoundError:
                return None
        return (st.st_size, f"{st.st_size}:{st.st_mtime_ns}", "") if stat_mod.S_ISREG(st.st_mode) else None

    def put(self, path: str, data: bytes, *, create_only: bool = False, sha256_b64: str = "",
            retain: Retention | None = None) -> bool:
        """Atomic: a temporary file, fsynced, then linked (create-only) or renamed into place."""
        final = self._abs(path)
        if self.staging and path.split("/", 1)[0] == self.staging:
            raise ValueError(f"{self.staging}/ is reserved for the place's own staging")
        if retain is not None:
            raise PermanentPlaceError(f"{self.url_of(path)}: a directory cannot keep Object Lock retention")
        with local_errors(self.url_of(path)):
            tmp = self._temp(final)
            try:
                with open(tmp, "wb") as f:
                    f.write(data)
                    f.flush()
                    os.fsync(f.fileno())
            except BaseException:
                tmp.unlink(missing_ok=True)
                raise
            return _publish(tmp, final, create_only)

    def delete(self, path: str) -> None:
        with local_errors(self.url_of(path)):
            try:
                os.unlink(self._abs(path))
            except FileNotFoundError:
                pass

    # -- deferred durability (a local repository's blobs: docs/format.md, sections 3 and 16) --
    def stage(self, path: str, data: bytes) -> Path:
        """`data` written under the staging directory, not fsynced and not yet at `path`: what
        publish_staged later makes durable and visible. An fsync of the file and of its
        directory costs about 1 ms each on ext4; a backup of 100,000 small files paid that for
        every blob; publish_staged fsyncs them all together, then their directories once each."""
        if not self.staging:
            raise ValueError(f"{self.url}: deferred puts need a staging directory")
        with local_errors(self.url_of(path)):
            tmp = self._temp(self._abs(path))
            try:
                with open(tmp, "wb") as f:
                    f.write(data)
            except BaseException:
                tmp.unlink(missing_ok=True)
                raise
        return tmp

    def publish_staged(self, staged: list[tuple[Path, str]]) -> int:
        """Each (staged file, path): flushed to disk, then linked to its path (create-only: a
        taken path keeps its object), then the links flushed too; returns how many paths were
        taken. Nothing is visible under its path before its bytes are durable, so a crash at
        any point leaves each object whole or absent, as a put does."""
        with local_errors(self.url):
            fsync_all(str(tmp) for tmp, _ in staged)
            taken = 0
            for tmp, path in staged:
                final = self._abs(path)
                try:
                    os.link(tmp, final)
                except FileExistsError:
                    taken += 1
                finally:
                    tmp.unlink(missing_ok=True)
            fsync_all(sorted({str(self._abs(path).parent) for _, path in staged}))
        return taken

    @staticmethod
    def discard_staged(staged: list[tuple[Path, str]]) -> None:
        for tmp, _ in staged:
            tmp.unlink(missing_ok=True)

    def delete_many(self, paths: list[str]) -> None:
        for path in paths:
            self.delete(path)

    def _temp(self, final: Path) -> Path:
        final.parent.mkdir(parents=True, exist_ok=True)
        if self.staging:
            staging = self.root / self.staging
            staging.mkdir(exist_ok=True)
            return staging / secrets.token_hex(16)
        return final.parent / f".{final.name}{PARTIAL}{secrets.token_hex(4)}"

    # -- uploads ----------------------------------------------------------------------------
    def pending_uploads(self, prefix: str = "") -> list[Upload]:
        """A directory's analogue of multipart uploads: the partial files copies left (a run
        killed mid-file keeps its partial to resume from), so that old ones are aborted."""
        base = self._abs(prefix.rstrip("/"))
        with local_errors(self.url_of(prefix.rstrip("/"))):
            found = self._partials(base) if base.is_dir() else []
            return found + (self._staged() if self.staging and not prefix.rstrip("/") else [])

    def _staged(self) -> list[Upload]:
        """What crashed puts left in the staging directory: Upload(staging/name, name)."""
        staging, out = self.root / self.staging, []
        if not staging.is_dir():
            return out
        with os.scandir(staging) as entries:
            for entry in entries:
                try:
                    mtime = entry.stat(follow_symlinks=False).st_mtime
                except FileNotFoundError:
                    continue  # a put published it meanwhile
                out.append(Upload(f"{self.staging}/{entry.name}", entry.name, mtime))
        return out

    def _partials(self, base: Path) -> list[Upload]:
        out = []
        for dirpath, _, names in os.walk(base):
            for name in names:
                if PARTIAL in name and name.startswith("."):
                    full = Path(dirpath) / name
                    final = full.parent / name[1:name.index(PARTIAL)]
                    try:
                        mtime = full.lstat().st_mtime
                    except FileNotFoundError:
                        continue
                    out.append(Upload(str(final.relative_to(self.root)), name, mtime))
        return out

    def abort(self, upload: Upload) -> None:
        with local_errors(self.url_of(upload.path)):
            (self._abs(upload.path).parent / upload.upload_id).unlink(missing_ok=True)

    def writer(self, path: str, size: int, part_size: int) -> "LocalWriter":
        with local_errors(self.url_of(path)):
            return LocalWriter(self, path, size, part_size)


class LocalReader:
    """Reads a file straight into the caller's buffers (no temporary objects)."""

    def __init__(self, full: Path, path: str, expect: FileStat | None, offset: int = 0) -> None:
        self._path, self._expect, self._where = path, expect, str(full)
        with local_errors(self._where):
            self._f = os.fdopen(os.open(full, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC), "rb", buffering=0)
            try:
                _check_same(path, os.fstat(self._f.fileno()), expect)
                self._f.seek(offset)
            except BaseException:
                self._f.close()
                raise

    def readinto(self, view: memoryview) -> int:
        with local_errors(self._where):
            return fill(view, self._f.readinto)

    def close(self) -> None:
        """The final check: the file must still be what was listed (and what was read)."""
        if not self._f.closed:
            try:
                with local_errors(self._where):
                    _check_same(self._path, os.fstat(self._f.fileno()), self._expect)
            finally:
                self._f.close()


class LocalWriter:
    """A file written by parts at their offsets (pwrite: any order, any thread) into a partial
    file of a fixed name beside it, fsynced and renamed into place on complete().

    Resuming: a run killed mid-file leaves the partial. The next run re-reads the source (as
    for S3) and compares each part with the partial's bytes at that offset: equal parts are
    kept, others written. No record of which parts were written is needed, and none can be
    wrong: a part cut short by the kill, or never written (zeros), simply differs. A partial
    from an older version of the file is corrected the same way. An exclusive flock keeps a
    second copier off the same partial."""

    multipart = True
    resumable = True

    def __init__(self, place: LocalPlace, path: str, size: int, part_size: int) -> None:
        self.final = place._abs(path)
        self.final.parent.mkdir(parents=True, exist_ok=True)
        self.tmp = self.final.parent / f".{self.final.name}{PARTIAL}{RESUMABLE}"
        self.size, self.part_size = size, part_size
        self._fd = os.open(self.tmp, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(self._fd)
            raise PermanentPlaceError(f"{self.final}: another copier is writing it now") from None
        self._found = os.fstat(self._fd).st_size  # bytes a killed run left, 0 for a new file
        os.ftruncate(self._fd, size)

    def resumable_parts(self) -> dict[int, tuple[int, int]]:
        """Every part the partial holds bytes for: (length, offset); matches() decides."""
        count = -(-self.size // self.part_size)
        out = {}
        for number in range(1, count + 1):
            offset = (number - 1) * self.part_size
            if offset < self._found:
                out[number] = (min(self.part_size, self.size - offset), offset)
        return out

    def write(self, number: int, data: memoryview, crc: str = "") -> None:
        offset = (number - 1) * self.part_size
        view = memoryview(data).cast("B")
        with local_errors(str(self.final)):
            while view:
                written = os.pwrite(self._fd, view, offset)
                view, offset = view[written:], offset + written

    def matches(self, stored: tuple[int, int], data: memoryview, crc: str) -> bool:
        length, offset = stored
        return length == len(data) and os.pread(self._fd, length, offset) == data

    def keep(self, number: int, stored: tuple, crc: str) -> None:
        pass  # the bytes are already where they belong

    def complete(self, sha256_b64: str = "") -> None:
        try:
            with local_errors(str(self.final)):
                os.fsync(self._fd)
                _publish(self.tmp, self.final, create_only=False)  # still holding the flock
        finally:
            os.close(self._fd)
            self._fd = -1

    def abort(self, keep_for_resume: bool = False) -> None:
        """Stop writing; the partial stays when the next run may resume from it (it is
        compared with the source part by part then, and aborted by age if never resumed)."""
        if self._fd >= 0:
            if not keep_for_resume:
                self.tmp.unlink(missing_ok=True)
            os.close(self._fd)  # releases the flock
            self._fd = -1


def _publish(tmp: Path, final: Path, create_only: bool) -> bool:
    try:
        if create_only:
            os.link(tmp, final)  # fails if the name is taken: create-only
        else:
            os.replace(tmp, final)
    except FileExistsError:
        return False
    finally:
        tmp.unlink(missing_ok=True)
    dfd = os.open(final.parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)
    return True


def _check_same(path: str, st: os.stat_result, expect: FileStat | None) -> None:
    if not stat_mod.S_ISREG(st.st_mode):
        raise SourceChanged(f"{path} is no longer a regular file")
    if expect is not None and (st.st_size, st.st_mtime_ns) != (expect.size, expect.mtime_ns):
        raise SourceChanged(f"{path} changed since it was listed (size {expect.size}->{st.st_size} "
                            "or mtime changed)")




@contextmanager
def local_errors(where: str) -> Iterator[None]:
    """Raise an OSError as the place contract's error (see the module docstring)."""
    try:
        yield
    except PlaceError:
        raise
    except FileNotFoundError as exc:
        raise PlaceMissing(f"{where}: not found") from exc
    except OSError as exc:
        kind = TransientPlaceError if exc.errno in _TRANSIENT_ERRNOS else PermanentPlaceError
        raise kind(f"{where}: {exc.strerror or exc}") from exc
