"""Copying checkpoint files between places: in parallel, in parts, in bounded memory, hashed.

Why it is built this way (checkpoints are tens to thousands of GB; a backup host is small):
- Each file is read as ONE sequential stream (a GetObject, or a file read) cut into parts;
  one stream is several times faster than many ranged GETs, and the SHA-256 the manifest
  records is computed on the bytes as they pass, so nothing is read twice.
- Parts are read straight into buffers of a byte-budgeted pool (buffers.py) and uploaded from
  them by a shared set of threads while the stream goes on; a reader waits for room in the
  budget BEFORE reading, so file data in memory never exceeds max_buffer, whatever the
  checkpoint's size.
- The part size follows the file's size (part_size_for): a file up to half the budget
  (default 144 MiB: a 64 MiB DCP shard plus its header, two at once) is one PUT, larger
  ones go in 16 MiB parts. Measured at moto (docs/benchmarks.md): a multipart upload costs
  the server 1.4-1.9x the CPU of one PUT of the same bytes (CompleteMultipartUpload copies
  every part again), and 32 MiB parts cost it about 25% more than 16 MiB ones.
- Several files stream at once (parallel_files): small files are latency-bound, large ones
  bandwidth-bound, and a checkpoint is usually a mix of both. Server-side copies, which hold
  no bytes here, run SERVER_SIDE_FILES at once.
- Between two S3 places with the same endpoint and credentials the bytes never pass through
  dr: CopyObject/UploadPartCopy (places/s3writing.server_copy); the digest is the server's SHA-256 of
  the copy, or, when the server has none, a read of the copy (that read also proves the copy).
- A file whose bytes do not match its expected digest (restore, verification) or whose source
  changed during the read is never made visible: its upload is aborted, its temp file removed.
"""

from __future__ import annotations

import base64
import hashlib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Callable, Iterable

from dr.kits.places.files import FileStat
from dr.kits.places.contract import Place, SourceChanged
from dr.kits.places.s3 import crc32_b64
from dr.kits.places.parts import PART, part_size_for
from dr.kits.places.s3writing import server_copy
from dr.exporters.checkpoints.transfer.buffers import BufferPool, Parts

SERVER_SIDE_FILES = 16
HASH_PIECE = 8 << 20


class DigestMismatch(Exception):
    """A file's bytes do not hash to what the manifest says."""


@dataclass(frozen=True)
class FileJob:
    src_path: str
    dst_path: str
    size: int
    expect: FileStat | None = None  # the listing's stat: a file that changed since is refused
    sha256: str = ""  # the digest the bytes must have ('' = unknown, record what is read)


@dataclass(frozen=True)
class FileDone:
    job: FileJob
    sha256: str
    uploaded: int  # bytes dr sent to the target (0 for a server-side copy)
    reused: int  # bytes kept from an interrupted upload's parts
    server_side: bool


class Transfer:
    """Copies files from `src` to `dst`; one instance per pair of places, reusable."""

    def __init__(self, src: Place, dst: Place, *, part_size: int | None = None, max_buffer: int = 144 << 20,
                 parallel_files: int = 4, server_side: bool = False) -> None:
        self.src, self.dst, self.part_size, self.max_buffer = src, dst, part_size, max_buffer
        self.server_side = server_side and src.is_s3 and dst.is_s3
        self.pool = BufferPool(max_buffer, min(part_size or PART, PART))
        # a server-side copy holds no bytes here and waits on the server: run more at once
        self.parallel_files = max(parallel_files, SERVER_SIDE_FILES) if self.server_side else parallel_files
        self._uploads = ThreadPoolExecutor(self.pool.slots, thread_name_prefix="dr-part")

    def close(self) -> None:
        self._uploads.shutdown(wait=True, cancel_futures=True)

    def run(self, jobs: Iterable[FileJob], before_visible: Callable[[FileJob, str], None] = lambda j, d: None
            ) -> tuple[list[FileDone], dict[str, BaseException]]:
        """Copy every job; returns what was copied and, per source path, what failed.

        before_visible(job, sha256) runs once a streamed file's bytes are all stored and
        verified, just before the file is made visible (CompleteMultipartUpload, the single
        PUT, the rename); for a server-side copy, just after the copy. Journaling there means
        a kill at any point leaves either a journal entry or no visible file, never an
        unaccounted complete file.
        """
        done: list[FileDone] = []
        failed: dict[str, BaseException] = {}
        jobs = sorted(jobs, key=lambda j: -j.size)  # big files first: the tail is short
        with ThreadPoolExecutor(self.parallel_files, thread_name_prefix="dr-file") as files:
            futures = {files.submit(self._one, job, before_visible): job for job in jobs}
            for future, job in futures.items():
                try:
                    done.append(future.result())
                except Exception as exc:  # one file failing must not hide the others' outcome
                    failed[job.src_path] = exc
        return done, failed

    def _one(self, job: FileJob, before_visible: Callable[[FileJob, str], None]) -> FileDone:
        if self.server_side:
            result = self._server_side(job)
            before_visible(job, result.sha256)
            return result
        return self._streamed(job, before_visible)

    # -- through dr -------------------------------------------------------------------------
    def _part_size(self, size: int) -> int:
        return part_size_for(size, self.max_buffer, self.part_size)

    def _streamed(self, job: FileJob, before_visible: Callable[[FileJob, str], None]) -> FileDone:
        part = self._part_size(job.size)
        writer = self.dst.writer(job.dst_path, job.size, part)
        stored = writer.resumable_parts()
        parts = Parts(self._uploads, self.pool)
        digest, sent, reused, read = hashlib.sha256(), 0, 0, 0
        reader = self.src.open_read(job.src_path, expect=job.expect)
        try:
            for number in range(1, max(1, -(-job.size // part)) + 1):
                want = min(part, job.size - read)
                buf = self.pool.take(want)  # exactly the part: the request sends the buffer itself
                view = memoryview(buf)
                got = reader.readinto(view)
                read += got
                if got != want:
                    self.pool.give(buf)
                    raise SourceChanged(f"{job.src_path}: read {read} bytes, listed {job.size}")
                digest.update(view)
                crc = crc32_b64(view) if writer.multipart else ""  # one PUT carries the SHA-256
                if number in stored and writer.matches(stored[number], view, crc):
                    writer.keep(number, stored[number], crc)
                    self.pool.give(buf)
                    reused += want
                else:
                    parts.submit(writer, number, buf, view, crc)
                    sent += want
                parts.settle()
            if reader.readinto(memoryview(bytearray(1))):
                raise SourceChanged(f"{job.src_path} grew beyond the {job.size} bytes listed")
            reader.close()  # a local file is checked against its listing once more here
            parts.wait()
            sha = _check_digest(job, digest.hexdigest())
            before_visible(job, sha)
            writer.complete(base64.b64encode(digest.digest()).decode())
        except (SourceChanged, DigestMismatch):
            parts.cancel()
            writer.abort()  # never resume from bytes that are not the checkpoint's
            raise
        except BaseException:
            parts.cancel()
            writer.abort(keep_for_resume=True)  # stored parts stay: the next run resumes from them
            raise
        finally:
            parts.finish()
            reader.close()
        return FileDone(job, sha, sent, reused, False)

    # -- server-side ------------------------------------------------------------------------
    def _server_side(self, job: FileJob) -> FileDone:
        sha = server_copy(self.src, job.src_path, job.size, self.dst, job.dst_path, self._uploads)
        if not sha:
            sha, size = hash_file(self.dst, job.dst_path)
            if size != job.size:
                self.dst.delete(job.dst_path)
                raise SourceChanged(f"{job.dst_path}: copy has {size} bytes, expected {job.size}")
        try:
            sha = _check_digest(job, sha)
        except DigestMismatch:
            self.dst.delete(job.dst_path)
            raise
        return FileDone(job, sha, 0, 0, True)


def hash_file(place: Place, path: str, piece: int = HASH_PIECE) -> tuple[str, int]:
    """SHA-256 and length of a file, read as one stream into one buffer."""
    digest, size = hashlib.sha256(), 0
    buf = memoryview(bytearray(piece))
    reader = place.open_read(path)
    try:
        while True:
            n = reader.readinto(buf)
            if not n:
                break
            digest.update(buf[:n])
            size += n
    finally:
        reader.close()
    return digest.hexdigest(), size


def _check_digest(job: FileJob, sha: str) -> str:
    if job.sha256 and sha != job.sha256:
        raise DigestMismatch(f"{job.src_path}: SHA-256 {sha[:16]}... does not match the manifest's "
                             f"{job.sha256[:16]}... (changed or corrupt)")
    return sha
