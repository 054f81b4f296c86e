"""An S3 prefix (any S3-compatible endpoint) as a checkpoint tree, a copy source and a copy target.

Why these operations and no more: discovery and completeness need the FileTree protocol
(list_objects_v2 paging: Key, Size, LastModified; ranged GetObject: headers and indexes at one
end of a multi-GB shard). Copying needs a sequential stream per file (one GetObject is far
faster than many small ranged ones), part uploads whose parts survive a killed process
(multipart uploads are resumed from ListParts), create-only puts for the manifest and marker
(If-None-Match: *), and CopyObject/UploadPartCopy for server-side copies.

Change detection: every listing remembers each object's ETag; reads and streams of a listed
object send If-Match, so an object replaced after it was judged complete fails the read
instead of mixing two checkpoints' bytes.

The client retries (standard mode): unlike the repository store, a copier's requests are all
idempotent (a part number re-uploaded replaces itself), and a stream that breaks half-way is
re-opened at the offset it reached.
"""

from __future__ import annotations

import base64
import threading
import zlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterator

import boto3
import botocore.config
import botocore.exceptions

from dr.exporters.checkpointing.formats.tree import FileStat
from dr.repository.stores.s3 import client_config

if TYPE_CHECKING:
    from dr.exporters.checkpointing.places.s3writing import S3Writer

_MISSING = {"NoSuchKey", "404", "NotFound"}
_STREAM_RETRIES = 3
READ_SLICE = 1 << 20  # bytes per socket read into a caller's buffer
COPY_OBJECT_LIMIT = 5 << 30  # S3's largest CopyObject; above it, UploadPartCopy


class SourceChanged(OSError):
    """A file changed (or vanished) between the listing that judged it and the copy."""


@dataclass(frozen=True)
class Upload:
    """A multipart upload that was started and neither completed nor aborted."""

    path: str
    upload_id: str
    initiated: float  # seconds since the epoch


def copier_config() -> botocore.config.Config:
    """The store's config plus retries; checksums only where dr passes them itself (botocore's
    default adds a CRC32 pass to every request), and no SigV4 payload hash (over plain http
    botocore would hash every body once more): each body carries dr's own CRC32 or SHA-256
    checksum, which the server verifies."""
    return client_config().merge(botocore.config.Config(
        retries={"mode": "standard", "total_max_attempts": 4},
        request_checksum_calculation="when_required",
        response_checksum_validation="when_required",
        max_pool_connections=64,
        s3={"addressing_style": "path", "payload_signing_enabled": False},
    ))


class Sessions:
    """boto3 sessions by (profile, region), shared by the places of one exporter run. A client
    made from a session that already made one costs ~7 ms instead of ~90 ms (the S3 service
    model is loaded once per session), and a run opens a client per root and per tier. Scoped
    to one run, not the process: a session keeps the credentials it first resolved. Sessions
    are not thread-safe, so clients are made under a lock; the clients themselves are."""

    def __init__(self) -> None:
        self._sessions: dict[tuple[str | None, str | None], boto3.session.Session] = {}
        self._lock = threading.Lock()

    def client(self, profile: str | None, region: str | None, endpoint_url: str | None):
        with self._lock:
            key = (profile, region)
            if key not in self._sessions:
                self._sessions[key] = boto3.session.Session(profile_name=profile, region_name=region)
            return self._sessions[key].client("s3", endpoint_url=endpoint_url, config=copier_config())


def crc32_b64(data: bytes | memoryview) -> str:
    return base64.b64encode(zlib.crc32(data).to_bytes(4, "big")).decode()


class S3Place:
    """`s3://bucket/prefix` on one endpoint; paths are '/'-separated, relative to the prefix."""

    is_s3 = True

    def __init__(self, bucket: str, prefix: str, *, endpoint_url: str | None = None,
                 region: str | None = None, profile: str | None = None, client=None,
                 sessions: "Sessions | None" = None) -> None:
        self.bucket, self.prefix = bucket, prefix.strip("/")
        self.endpoint_url, self.region, self.profile = endpoint_url, region, profile
        self.client = client or (sessions or Sessions()).client(profile, region, endpoint_url)
        self._etags: dict[str, str] = {}
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"S3Place({self.url!r})"

    @property
    def url(self) -> str:
        return f"s3://{self.bucket}/{self.prefix}" if self.prefix else f"s3://{self.bucket}"

    def key(self, path: str) -> str:
        return f"{self.prefix}/{path}" if self.prefix and path else (self.prefix or path)

    def url_of(self, path: str) -> str:
        return f"s3://{self.bucket}/{self.key(path)}"

    def location(self) -> dict:
        """Where this is, as recorded in manifests and snapshot records (never credentials)."""
        out = {"url": self.url}
        out.update({k: v for k, v in (("endpoint_url", self.endpoint_url), ("region", self.region),
                                      ("profile", self.profile)) if v})
        return out

    # -- FileTree ---------------------------------------------------------------------------
    def list_files(self, prefix: str = "") -> Iterator[FileStat]:
        base = self.key(prefix)
        full = f"{base}/" if base else ""
        cut = len(self.prefix) + 1 if self.prefix else 0
        pages = self.client.get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=full)
        for page in pages:
            for item in page.get("Contents", ()):
                if item["Key"].endswith("/"):
                    continue  # a console's "folder" object, not a file
                path = item["Key"][cut:]
                with self._lock:
                    self._etags[path] = item.get("ETag", "")
                yield FileStat(path, item["Size"], int(item["LastModified"].timestamp() * 1e9))

    def read(self, path: str, start: int, length: int) -> bytes:
        if length <= 0:
            return b""
        try:
            response = self.client.get_object(Bucket=self.bucket, Key=self.key(path),
                                              Range=f"bytes={start}-{start + length - 1}", **self._if_match(path))
            return response["Body"].read()
        except botocore.exceptions.ClientError as exc:
            if error_code(exc) == "InvalidRange":
                return b""
            raise mapped_error(exc, self.url_of(path)) from None

    def version(self, path: str) -> str:
        """What the last listing saw (the ETag); '' if this path was not listed."""
        with self._lock:
            return self._etags.get(path, "")

    def _if_match(self, path: str) -> dict:
        etag = self.version(path)
        return {"IfMatch": etag} if etag else {}

    # -- streaming reads --------------------------------------------------------------------
    def open_read(self, path: str, expect: FileStat | None = None) -> "S3Reader":
        """A sequential reader of the whole object: one GetObject, re-opened at the offset
        reached if it breaks. (`expect` is for the local interface: here the listing's ETag,
        sent as If-Match, does that job.)"""
        return S3Reader(self, path)

    def _open(self, path: str, offset: int):
        extra = {"Range": f"bytes={offset}-"} if offset else {}
        try:
            return self.client.get_object(Bucket=self.bucket, Key=self.key(path), **extra,
                                          **self._if_match(path))["Body"]
        except botocore.exceptions.ClientError as exc:
            if error_code(exc) == "InvalidRange":
                return None
            raise mapped_error(exc, self.url_of(path)) from None

    # -- small objects ----------------------------------------------------------------------
    def get(self, path: str) -> bytes | None:
        try:
            return self.client.get_object(Bucket=self.bucket, Key=self.key(path))["Body"].read()
        except botocore.exceptions.ClientError as exc:
            if error_code(exc) in _MISSING:
                return None
            raise mapped_error(exc, self.url_of(path)) from None

    def head(self, path: str) -> tuple[int, str, str] | None:
        """(size, etag, base64 ChecksumSHA256 or '') of an object, None if absent."""
        try:
            h = self.client.head_object(Bucket=self.bucket, Key=self.key(path), ChecksumMode="ENABLED")
        except botocore.exceptions.ClientError as exc:
            if error_code(exc) in _MISSING:
                return None
            raise mapped_error(exc, self.url_of(path)) from None
        return h["ContentLength"], h.get("ETag", ""), h.get("ChecksumSHA256", "")

    def put(self, path: str, data: bytes, *, create_only: bool = False, sha256_b64: str = "") -> bool:
        """One atomic PUT; with create_only, False (and nothing written) if the key exists."""
        extra = {"IfNoneMatch": "*"} if create_only else {}
        checksum = {"ChecksumSHA256": sha256_b64} if sha256_b64 else {"ChecksumCRC32": crc32_b64(data)}
        try:
            self.client.put_object(Bucket=self.bucket, Key=self.key(path), Body=data, **checksum, **extra)
            return True
        except botocore.exceptions.ClientError as exc:
            if create_only and error_code(exc) in ("PreconditionFailed", "412"):
                return False
            raise mapped_error(exc, self.url_of(path)) from None

    def delete(self, path: str) -> None:
        try:
            self.client.delete_object(Bucket=self.bucket, Key=self.key(path))
        except botocore.exceptions.ClientError as exc:
            if error_code(exc) not in _MISSING:
                raise mapped_error(exc, self.url_of(path)) from None

    def delete_many(self, paths: list[str]) -> None:
        """DeleteObjects, 1,000 keys a request (S3's limit): a copy's journal or a pruned copy
        is one request instead of one per file."""
        for start in range(0, len(paths), 1000):
            batch = [{"Key": self.key(p)} for p in paths[start:start + 1000]]
            try:
                result = self.client.delete_objects(Bucket=self.bucket, Delete={"Objects": batch, "Quiet": True})
            except botocore.exceptions.ClientError as exc:
                raise mapped_error(exc, self.url) from None
            failed = [e for e in result.get("Errors", ()) if e.get("Code") not in _MISSING]
            if failed:
                raise OSError(f"{self.url}: could not delete {failed[0].get('Key')}: {failed[0].get('Message')}")

    # -- multipart uploads ------------------------------------------------------------------
    def pending_uploads(self, prefix: str = "") -> list[Upload]:
        """Multipart uploads under `prefix` (a path, or a directory ending in '/')."""
        cut = len(self.prefix) + 1 if self.prefix else 0
        out: list[Upload] = []
        full = self.key(prefix) if prefix else (f"{self.prefix}/" if self.prefix else "")
        pages = self.client.get_paginator("list_multipart_uploads").paginate(Bucket=self.bucket, Prefix=full)
        for page in pages:
            for u in page.get("Uploads", ()):
                out.append(Upload(u["Key"][cut:], u["UploadId"], u["Initiated"].timestamp()))
        return out

    def abort(self, upload: Upload) -> None:
        try:
            self.client.abort_multipart_upload(Bucket=self.bucket, Key=self.key(upload.path),
                                               UploadId=upload.upload_id)
        except botocore.exceptions.ClientError as exc:
            if error_code(exc) not in ("NoSuchUpload", "404"):
                raise mapped_error(exc, self.url_of(upload.path)) from None

    def list_parts(self, path: str, upload_id: str) -> dict[int, tuple[int, str, str]]:
        """part number -> (size, ETag without quotes, base64 CRC32 or '') of stored parts."""
        parts: dict[int, tuple[int, str, str]] = {}
        pages = self.client.get_paginator("list_parts").paginate(
            Bucket=self.bucket, Key=self.key(path), UploadId=upload_id)
        for page in pages:
            for p in page.get("Parts", ()):
                parts[p["PartNumber"]] = (p["Size"], p["ETag"].strip('"'), p.get("ChecksumCRC32", ""))
        return parts

    def writer(self, path: str, size: int, part_size: int) -> "S3Writer":
        from dr.exporters.checkpointing.places.s3writing import S3Writer

        return S3Writer(self, path, size, part_size)


class S3Reader:
    """Fills caller-owned buffers from one GetObject stream, in slices of READ_SLICE bytes:
    never a large temporary object per read, so memory stays what the caller's buffers are."""

    def __init__(self, place: S3Place, path: str) -> None:
        self._place, self._path, self._offset, self._tries = place, path, 0, 0
        self._body = place._open(path, 0)

    def readinto(self, view: memoryview) -> int:
        """Fill `view`; fewer bytes only at the end of the object."""
        got = 0
        while got < len(view) and self._body is not None:
            try:
                n = self._body.readinto(view[got:got + READ_SLICE])
            except (botocore.exceptions.ResponseStreamingError, botocore.exceptions.IncompleteReadError,
                    botocore.exceptions.ReadTimeoutError, ConnectionError) as exc:
                self._reopen(exc)
                continue
            if n == 0:
                break
            got += n
            self._offset += n
            self._tries = 0
        return got

    def _reopen(self, exc: Exception) -> None:
        self._tries += 1
        if self._tries > _STREAM_RETRIES:
            raise OSError(f"reading {self._place.url_of(self._path)}: {exc}") from exc
        self.close()
        self._body = self._place._open(self._path, self._offset)

    def close(self) -> None:
        if self._body is not None:
            self._body.close()
            self._body = None


def error_code(exc: botocore.exceptions.ClientError) -> str:
    return str(exc.response.get("Error", {}).get("Code", ""))


def mapped_error(exc: botocore.exceptions.ClientError, where: str) -> Exception:
    """Missing -> FileNotFoundError, replaced since listed -> SourceChanged, else OSError;
    the message names the object, the S3 code and status, never credentials."""
    code = error_code(exc)
    status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
    if code in _MISSING:
        return FileNotFoundError(f"{where}: not found")
    if code in ("PreconditionFailed", "412"):
        return SourceChanged(f"{where} changed since it was listed")
    text = exc.response.get("Error", {}).get("Message", "")
    return OSError(f"{where}: {code} (HTTP {status}) {text}".rstrip())
