"""Where checkpoints and their DR copies live: a directory (this module) or S3 (s3place.py).

Why one interface for both: a trainer writes to a shared filesystem or to a bucket, and the
DR copy goes to a bucket or a mounted directory in another failure domain; the copier, the
completeness checks and restore should not care which. A place is a root; paths under it are
'/'-separated and relative. Both kinds implement the FileTree protocol (list, ranged read),
sequential streams, small atomic writes, and per-file writers.

Local writes are atomic like the repository's local store: a temporary file in the final
directory, fsynced, then renamed (create-only puts link instead, which fails if the name is
taken); a crash leaves only a `.dr-partial-*` file, which listings skip.
"""

from __future__ import annotations

import fcntl
import os
import secrets
import stat as stat_mod
from pathlib import Path
from typing import Iterator, Union
from urllib.parse import urlsplit

from dr.exporters.checkpointing.formats.dcp_metadata import check_relative_path
from dr.exporters.checkpointing.options import Location
from dr.exporters.checkpointing.places.s3 import S3Place, Sessions, SourceChanged, Upload
from dr.exporters.checkpointing.formats.tree import FileStat, LocalTree

PARTIAL = ".dr-partial-"
RESUMABLE = "resume"  # the suffix of a copy's partial file, kept across runs to resume from

def open_place(location: Location | dict, base_dir: str = ".",
               sessions: Sessions | None = None) -> "LocalPlace | S3Place":
    """The place a plan (or a recorded manifest) names; relative directories: the plan's folder."""
    loc = location if isinstance(location, Location) else Location.model_validate(location)
    if loc.is_s3:
        parts = urlsplit(loc.url)
        return S3Place(parts.netloc, parts.path.strip("/"), endpoint_url=loc.endpoint_url,
                       region=loc.region, profile=loc.profile, sessions=sessions)
    return LocalPlace(os.path.normpath(os.path.join(base_dir, loc.url)))


class LocalPlace:
    """A directory. Symlinks are never followed (see LocalTree)."""

    is_s3 = False

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)
        self._tree = LocalTree(self.root)

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
        if not self._abs(prefix).is_dir():
            return
        for f in self._tree.list_files(prefix):
            if PARTIAL not in f.name:
                yield f

    def read(self, path: str, start: int, length: int) -> bytes:
        return self._tree.read(path, start, length)

    def version(self, path: str) -> str:
        """Size and mtime, read now (a file changed after the listing is caught by the
        reader, which compares the file with the listing's FileStat)."""
        try:
            st = os.lstat(self._abs(path))
        except FileNotFoundError:
            return ""
        return f"{st.st_size}:{st.st_mtime_ns}"

    # -- streaming reads --------------------------------------------------------------------
    def open_read(self, path: str, expect: FileStat | None = None) -> "LocalReader":
        """A sequential reader; SourceChanged if the file's size or mtime differ from
        `expect` when opened or when closed."""
        return LocalReader(self._abs(path), path, expect)

    # -- small objects ----------------------------------------------------------------------
    def get(self, path: str) -> bytes | None:
        try:
            fd = os.open(self._abs(path), os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except FileNotFoundError:
            return None
        with os.fdopen(fd, "rb") as f:
            return f.read()

    def head(self, path: str) -> tuple[int, str, str] | None:
        try:
            st = os.lstat(self._abs(path))
        except FileNotFoundError:
            return None
        return (st.st_size, f"{st.st_size}:{st.st_mtime_ns}", "") if stat_mod.S_ISREG(st.st_mode) else None

    def put(self, path: str, data: bytes, *, create_only: bool = False, sha256_b64: str = "") -> bool:
        """Atomic: a temporary file, fsynced, then linked (create-only) or renamed into place."""
        final = self._abs(path)
        tmp = self._temp(final)
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        return _publish(tmp, final, create_only)

    def delete(self, path: str) -> None:
        try:
            os.unlink(self._abs(path))
        except FileNotFoundError:
            pass

    def delete_many(self, paths: list[str]) -> None:
        for path in paths:
            self.delete(path)

    def _temp(self, final: Path) -> Path:
        final.parent.mkdir(parents=True, exist_ok=True)
        return final.parent / f".{final.name}{PARTIAL}{secrets.token_hex(4)}"

    # -- uploads ----------------------------------------------------------------------------
    def pending_uploads(self, prefix: str = "") -> list[Upload]:
        """A directory's analogue of multipart uploads: the partial files copies left (a run
        killed mid-file keeps its partial to resume from), so that old ones are aborted."""
        base = self._abs(prefix.rstrip("/"))
        if not base.is_dir():
            return []
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
        (self._abs(upload.path).parent / upload.upload_id).unlink(missing_ok=True)

    def writer(self, path: str, size: int, part_size: int) -> "LocalWriter":
        return LocalWriter(self, path, size, part_size)


class LocalReader:
    """Reads a file straight into the caller's buffers (no temporary objects)."""

    def __init__(self, full: Path, path: str, expect: FileStat | None) -> None:
        self._path, self._expect = path, expect
        self._f = os.fdopen(os.open(full, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC), "rb", buffering=0)
        _check_same(path, os.fstat(self._f.fileno()), expect)

    def readinto(self, view: memoryview) -> int:
        got = 0
        while got < len(view):
            n = self._f.readinto(view[got:])
            if not n:
                break
            got += n
        return got

    def close(self) -> None:
        """The final check: the file must still be what was listed (and what was read)."""
        if not self._f.closed:
            try:
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
            raise OSError(f"{self.final}: another copier is writing it now") from None
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
        while view:
            written = os.pwrite(self._fd, view, offset)
            view, offset = view[written:], offset + written

    def matches(self, stored: tuple[int, int], data: memoryview, crc: str) -> bool:
        length, offset = stored
        return length == len(data) and os.pread(self._fd, length, offset) == data

    def keep(self, number: int, stored: tuple, crc: str) -> None:
        pass  # the bytes are already where they belong

    def complete(self, sha256_b64: str = "") -> None:
        os.fsync(self._fd)
        try:
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



Place = Union[LocalPlace, S3Place]
