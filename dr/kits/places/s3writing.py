"""Writing one object to S3 for a copy: single PUT, resumable multipart upload, or server-side.

Why resumable: a checkpoint shard can be tens of GB. When the copier is killed half-way, the
parts it uploaded stay on the server (until completed or aborted), so the next run lists the
key's pending upload and its parts, re-reads the source (reading is cheaper than uploading)
and uploads only the parts whose bytes are not already stored: a part is reused when its
size and checksum (the part's CRC32 when the server keeps it, else its ETag, which S3 makes
the MD5 of the part) match the source's bytes.

Why CRC32 on parts: S3 verifies it on arrival, so bytes damaged on the way are refused, and it
costs a fraction of MD5 (SHA-256 of the whole file is computed once, by the caller). A file
that fits one part is one PUT carrying that SHA-256, which S3 verifies and keeps.

Server-side copies (same endpoint and credentials): CopyObject with ChecksumAlgorithm=SHA256
up to 5 GiB, so S3 returns the SHA-256 of the copy it made; above that, UploadPartCopy of
ranges in parallel (S3 keeps no whole-object SHA-256 then: the caller hashes the copy).
"""

from __future__ import annotations

import base64
import hashlib
import threading
from concurrent.futures import Executor
from typing import Callable, TypeVar

from dr.kits.places.contract import PermanentPlaceError, Place, PlaceMissing, SourceChanged, Upload
from dr.kits.places.retrying import call, unwrapped
from dr.kits.places.s3 import COPY_OBJECT_LIMIT, S3Place, s3_errors
from dr.kits.places.bodies import body_of
from dr.kits.s3.clients import error_code

T = TypeVar("T")

#: UploadPartCopy range size: few requests, well under S3's 5 GiB part limit
COPY_PART = 512 << 20


class S3Writer:
    """One object being written. Parts may be written from several threads, in any order."""

    def __init__(self, place: S3Place, path: str, size: int, part_size: int) -> None:
        self.place, self.path, self.size, self.part_size = place, path, size, part_size
        self.multipart = size > part_size
        self.upload_id: str | None = None
        self._parts: dict[int, tuple[str, str]] = {}  # number -> (etag, crc32)
        self._single: tuple[memoryview, str] | None = None
        self._completed = False  # complete() was tried once (its answer may have been lost)
        self._lock = threading.Lock()

    # -- resuming ---------------------------------------------------------------------------
    def resumable_parts(self) -> dict[int, tuple[int, str, str]]:
        """Parts already stored by an interrupted upload of this key with our part size."""
        if not self.multipart:
            return {}
        uploads = [u for u in self.place.pending_uploads(self.path) if u.path == self.path]
        for upload in sorted(uploads, key=lambda u: u.initiated, reverse=True):
            parts = self.place.list_parts(self.path, upload.upload_id)
            if parts and _fits(parts, self.size, self.part_size):
                self.upload_id = upload.upload_id
                return parts
        return {}

    @staticmethod
    def matches(stored: tuple[int, str, str], data: memoryview, crc: str) -> bool:
        """Whether a stored part holds exactly `data`."""
        size, etag, stored_crc = stored
        if size != len(data):
            return False
        if stored_crc:
            return stored_crc == crc
        return etag == hashlib.md5(data, usedforsecurity=False).hexdigest()

    def keep(self, number: int, stored: tuple[int, str, str], crc: str) -> None:
        with self._lock:
            self._parts[number] = (stored[1], crc)

    # -- writing ----------------------------------------------------------------------------
    def write(self, number: int, data: memoryview, crc: str) -> None:
        """Upload part `number` (1-based); a file that fits one part is kept for complete()."""
        if not self.multipart:
            self._single = (data, crc)
            return
        upload_id = self._ensure_upload()
        with s3_errors(self.place.url_of(self.path)):
            response = self.place.client.upload_part(
                Bucket=self.place.bucket, Key=self.place.key(self.path), UploadId=upload_id,
                PartNumber=number, Body=body_of(data), ChecksumCRC32=crc)
        with self._lock:
            self._parts[number] = (response["ETag"].strip('"'), crc)

    def _ensure_upload(self) -> str:
        with self._lock:
            if self.upload_id is None:
                with s3_errors(self.place.url_of(self.path)):
                    self.upload_id = self.place.client.create_multipart_upload(
                        Bucket=self.place.bucket, Key=self.place.key(self.path),
                        ChecksumAlgorithm="CRC32")["UploadId"]
            return self.upload_id

    def complete(self, sha256_b64: str = "") -> None:
        """Make the object visible: the single PUT (carrying the file's SHA-256, base64), or
        CompleteMultipartUpload. A retry of a completion whose answer was lost finds no upload:
        the object of our size is then the one we completed."""
        if not self.multipart:
            data = body_of(self._single[0]) if self._single else b""
            self.place.put(self.path, data, sha256_b64=sha256_b64)
            return
        parts = [{"PartNumber": n, "ETag": f'"{etag}"', "ChecksumCRC32": crc}
                 for n, (etag, crc) in sorted(self._parts.items())]
        retry, self._completed = self._completed, True
        with s3_errors(self.place.url_of(self.path)):
            try:
                self.place.client.complete_multipart_upload(
                    Bucket=self.place.bucket, Key=self.place.key(self.path), UploadId=self._ensure_upload(),
                    MultipartUpload={"Parts": parts})
            except Exception as exc:
                if not (retry and _completed_earlier(self.place, self.path, self.size, exc)):
                    raise

    @property
    def resumable(self) -> bool:
        return self.multipart

    def abort(self, keep_for_resume: bool = False) -> None:
        """Abort the multipart upload, unless the next run may resume it (its stored parts
        are compared with the source then; aborted by age if never resumed)."""
        if self.upload_id is not None and not (keep_for_resume and self.multipart):
            self.place.abort(Upload(self.path, self.upload_id, 0.0))


def _fits(parts: dict[int, tuple[int, str, str]], size: int, part_size: int) -> bool:
    """Stored parts can be reused only if they cut the file where we cut it."""
    count = -(-size // part_size)
    for number, (psize, _, _) in parts.items():
        want = part_size if number < count else size - part_size * (count - 1)
        if not 1 <= number <= count or psize != want:
            return False
    return True


def server_copy(src: Place, src_path: str, size: int, dst: Place, dst_path: str, pool: Executor) -> str:
    """Copy an object inside the object store; returns the copy's SHA-256 (hex) when the
    server computed it, else ''. SourceChanged when the source is not what was listed.

    Each request is retried on its own under dst's policy (a copy is three to a few hundred
    requests: retrying the whole copy for one failed HEAD would, at a few percent of failed
    requests, give up on large checkpoints)."""
    bare_src, bare_dst = unwrapped(src), unwrapped(dst)
    etag = bare_src.version(src_path)
    source = {"Bucket": bare_src.bucket, "Key": bare_src.key(src_path)}
    try:
        if size <= COPY_OBJECT_LIMIT:
            result = _request(dst, dst_path, lambda: bare_dst.client.copy_object(
                Bucket=bare_dst.bucket, Key=bare_dst.key(dst_path), CopySource=source, ChecksumAlgorithm="SHA256",
                **({"CopySourceIfMatch": etag} if etag else {}))["CopyObjectResult"])
            digest = result.get("ChecksumSHA256", "")
        else:
            _part_copy(source, etag, size, dst, dst_path, pool)
            digest = ""
    except SourceChanged:  # the condition is on the source
        raise SourceChanged(f"{src.url_of(src_path)} changed since it was listed") from None
    except PlaceMissing:  # so is a missing key (the target's key is being made)
        raise PlaceMissing(f"{src.url_of(src_path)}: not found") from None
    _check_unchanged(src, src_path, etag, size, dst, dst_path)
    return base64.b64decode(digest).hex() if digest and "-" not in digest else ""


def _request(place: Place, path: str, fn: Callable[[], T]) -> T:
    """One S3 request, its errors as the place contract's, retried under the place's policy."""
    def once() -> T:
        with s3_errors(place.url_of(path)):
            return fn()
    return call(place, once)


def _part_copy(source: dict, etag: str, size: int, dst: Place, dst_path: str, pool: Executor) -> None:
    bare = unwrapped(dst)
    client, key = bare.client, bare.key(dst_path)
    upload_id = _request(dst, dst_path, lambda: client.create_multipart_upload(Bucket=bare.bucket, Key=key)["UploadId"])
    condition = {"CopySourceIfMatch": etag} if etag else {}

    def part(number: int, start: int) -> dict:
        end = min(size, start + COPY_PART) - 1
        r = _request(dst, dst_path, lambda: client.upload_part_copy(
            Bucket=bare.bucket, Key=key, UploadId=upload_id, PartNumber=number,
            CopySource=source, CopySourceRange=f"bytes={start}-{end}", **condition))
        return {"PartNumber": number, "ETag": r["CopyPartResult"]["ETag"]}

    try:
        futures = [pool.submit(part, i + 1, start) for i, start in enumerate(range(0, size, COPY_PART))]
        parts = [f.result() for f in futures]
        _complete(dst, dst_path, upload_id, parts, size)
    except BaseException:
        dst.abort(Upload(dst_path, upload_id, 0.0))
        raise


def _complete(dst: Place, dst_path: str, upload_id: str, parts: list[dict], size: int) -> None:
    bare, tried = unwrapped(dst), []

    def once() -> None:
        retry = bool(tried)
        tried.append(True)
        try:
            bare.client.complete_multipart_upload(Bucket=bare.bucket, Key=bare.key(dst_path), UploadId=upload_id,
                                                  MultipartUpload={"Parts": parts})
        except Exception as exc:
            if not (retry and _completed_earlier(bare, dst_path, size, exc)):
                raise
    _request(dst, dst_path, once)


def _completed_earlier(place: S3Place, path: str, size: int, exc: Exception) -> bool:
    """Whether a CompleteMultipartUpload retry that found no upload follows an attempt that
    completed it and lost its answer: the object of our size is then the one we completed."""
    if error_code(exc) != "NoSuchUpload":
        return False
    done = place.head(path)
    return done is not None and done[0] == size


def _check_unchanged(src: Place, src_path: str, etag: str, size: int, dst: Place, dst_path: str) -> None:
    """Some servers ignore CopySourceIfMatch: compare the source's ETag after the copy, and
    the copy's size, so a checkpoint replaced during the copy is never published."""
    now = src.head(src_path)
    copied = dst.head(dst_path)
    if now is None or (etag and now[1] != etag) or now[0] != size:
        dst.delete(dst_path)
        raise SourceChanged(f"{src.url_of(src_path)} changed during the copy")
    if copied is None or copied[0] != size:
        raise PermanentPlaceError(f"{dst.url_of(dst_path)}: copy has {copied[0] if copied else 'no'} bytes, expected {size}")
