"""An S3 prefix (any S3-compatible endpoint) as a place: a checkpoint tree, a copy source and target.

Why these operations and no more: discovery and completeness need the FileTree protocol
(list_objects_v2 paging: Key, Size, LastModified; ranged GetObject: headers and indexes at one
end of a multi-GB shard). Copying needs a sequential stream per file (one GetObject is far
faster than many small ranged ones), part uploads whose parts survive a killed process
(multipart uploads are resumed from ListParts), create-only puts for the manifest and marker
(If-None-Match: *), and CopyObject/UploadPartCopy for server-side copies (s3writing.py).

Change detection: every listing remembers each object's ETag; reads and streams of a listed
object send If-Match, so an object replaced after it was judged complete fails the read
(SourceChanged) instead of mixing two checkpoints' bytes.

Every request is made once (failures mapped to the contract's errors by s3errors.py): the client is the kit's (dr/kits/s3/clients.py, botocore retries
off) or the lean one (dr/kits/s3/lean.py: the repository's store, whose unchanged backup must
not pay for importing botocore; this module imports botocore only where a request needs it),
and failures are mapped to the place contract's errors by one set of rules (transient:
throttling, 5xx, timeouts, connection resets, also mid-body). Retries are RetryingPlace's; a
copier's requests are all idempotent (a part number re-uploaded replaces itself), and a
stream that breaks half-way is re-opened there at the offset it reached.
"""

from __future__ import annotations

import base64
import hashlib
import http.client
import sys
import threading
import zlib
from typing import TYPE_CHECKING, Iterator

from dr.kits.places.files import check_relative_path
from dr.kits.places.files import FileStat
from dr.kits.places.contract import (PermanentPlaceError, Place, Retention,
                                    TransientPlaceError, Upload)
from dr.kits.places.s3errors import CHANGED, s3_errors  # s3_errors: also for s3writing and s3locking
from dr.kits.s3.clients import TRANSIENT_CODES, error_code, http_status, is_missing, new_client
from dr.kits.s3.lean import LeanS3Client

if TYPE_CHECKING:
    import boto3

    from dr.kits.places.s3writing import S3Writer

READ_SLICE = 1 << 20  # bytes per socket read into a caller's buffer
COPY_OBJECT_LIMIT = 5 << 30  # S3's largest CopyObject; above it, UploadPartCopy


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
        import boto3

        with self._lock:
            key = (profile, region)
            if key not in self._sessions:
                self._sessions[key] = boto3.session.Session(profile_name=profile, region_name=region)
            return new_client(self._sessions[key], endpoint_url, max_pool_connections=64)


def crc32_b64(data: bytes | memoryview) -> str:
    return base64.b64encode(zlib.crc32(data).to_bytes(4, "big")).decode()


class S3Place(Place):
    """`s3://bucket/prefix` on one endpoint; paths are '/'-separated, relative to the prefix.

    `client` is a botocore S3 client or the lean one (dr/kits/s3/lean.py: put, get, head,
    list and delete of one object, on the standard library). With the lean client those
    requests go through it and everything else (multipart uploads, copies, Object Lock) through
    its botocore client, built on first need. `remember_versions=False`: listings keep no
    ETags, so version() is '' and reads send no If-Match: the place gives up the contract's
    SourceChanged clause, which is for files that may be replaced. Only for write-once objects,
    where a listing's ETags would only cost memory (the repository's store).
    `verify_streams`: open_read of a whole object asks for its stored SHA-256 (ChecksumMode)
    and the body is checked against it at its end, as get() always is (the repository's
    store). Off for copies: their parts are checked by CRC32 and the whole by the copier's own
    SHA-256, and botocore's checking body would take the direct socket reads away."""

    is_s3 = True

    def __init__(self, bucket: str, prefix: str, *, endpoint_url: str | None = None,
                 region: str | None = None, profile: str | None = None, client=None,
                 sessions: "Sessions | None" = None, remember_versions: bool = True,
                 verify_streams: bool = False) -> None:
        self.bucket, self.prefix = bucket, prefix.strip("/")
        self.endpoint_url, self.region, self.profile = endpoint_url, region, profile
        self._hot = client or (sessions or Sessions()).client(profile, region, endpoint_url)
        self._remember, self._verify = remember_versions, verify_streams
        self._etags: dict[str, str] = {}
        self._lock = threading.Lock()
        # Flipped off once if the server answers 501 to If-None-Match (see put).
        self._conditional_put = True

    @property
    def client(self):
        """The botocore client: the lean client's (built on first need), or the only one."""
        return self._hot.botocore() if isinstance(self._hot, LeanS3Client) else self._hot

    def close(self) -> None:
        """Release the client's connections (not part of the contract: places live for a run)."""
        self._hot.close()

    def __repr__(self) -> str:
        return f"S3Place({self.url!r})"

    @property
    def url(self) -> str:
        return f"s3://{self.bucket}/{self.prefix}" if self.prefix else f"s3://{self.bucket}"

    def key(self, path: str) -> str:
        """The object key of a path; a prefix may end in '/' (a directory)."""
        if path:
            check_relative_path(path[:-1] if path.endswith("/") else path)
        return f"{self.prefix}/{path}" if self.prefix and path else (self.prefix or path)

    def url_of(self, path: str) -> str:
        return f"s3://{self.bucket}/{self.key(path)}"

    def location(self) -> dict:
        out = {"url": self.url}
        out.update({k: v for k, v in (("endpoint_url", self.endpoint_url), ("region", self.region),
                                      ("profile", self.profile)) if v})
        return out

    # -- FileTree ---------------------------------------------------------------------------
    def list_files(self, prefix: str = "") -> Iterator[FileStat]:
        base = self.key(prefix)
        full = f"{base}/" if base else ""
        cut = len(self.prefix) + 1 if self.prefix else 0
        with s3_errors(self.url_of(prefix)):
            pages = self._hot.get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=full)
            for page in pages:
                for item in page.get("Contents", ()):
                    if item["Key"].endswith("/"):
                        continue  # a console's "folder" object, not a file
                    path = item["Key"][cut:]
                    if self._remember:
                        with self._lock:
                            self._etags[path] = item.get("ETag", "")
                    yield FileStat(path, item["Size"], int(item["LastModified"].timestamp() * 1e9))

    def read(self, path: str, start: int, length: int) -> bytes:
        if length <= 0:
            return b""
        with s3_errors(self.url_of(path)):
            try:
                response = self._hot.get_object(Bucket=self.bucket, Key=self.key(path),
                                                Range=f"bytes={start}-{start + length - 1}", **self._if_match(path))
                return response["Body"].read()
            except Exception as exc:
                if error_code(exc) == "InvalidRange":
                    return b""
                raise

    def version(self, path: str) -> str:
        """What the last listing saw (the ETag); '' if this path was not listed."""
        with self._lock:
            return self._etags.get(path, "")

    def _if_match(self, path: str) -> dict:
        etag = self.version(path)
        return {"IfMatch": etag} if etag else {}

    # -- streaming reads --------------------------------------------------------------------
    def open_read(self, path: str, expect: FileStat | None = None, offset: int = 0) -> "S3Reader":
        """A sequential reader of the object from `offset`: one GetObject. (`expect` is for
        directories: here the listing's ETag, sent as If-Match, does that job.)"""
        return S3Reader(self, path, offset)

    def _open(self, path: str, offset: int):
        # verify_streams, the whole object: the stored SHA-256 is asked for, checked at the end
        extra = {"Range": f"bytes={offset}-"} if offset else ({"ChecksumMode": "ENABLED"} if self._verify else {})
        with s3_errors(self.url_of(path)):
            try:
                return self._hot.get_object(Bucket=self.bucket, Key=self.key(path), **extra,
                                            **self._if_match(path))["Body"]
            except Exception as exc:
                if error_code(exc) == "InvalidRange":
                    return None
                raise

    # -- small objects ----------------------------------------------------------------------
    def get(self, path: str) -> bytes | None:
        """The whole object, checked against the SHA-256 stored with it (if one was)."""
        with s3_errors(self.url_of(path)):
            try:
                body = self._hot.get_object(Bucket=self.bucket, Key=self.key(path), ChecksumMode="ENABLED")["Body"]
                return body.read()
            except Exception as exc:
                if is_missing(exc):
                    return None
                raise

    def head(self, path: str) -> tuple[int, str, str] | None:
        """(size, etag, base64 ChecksumSHA256 or '') of an object, None if absent."""
        with s3_errors(self.url_of(path)):
            try:
                h = self._hot.head_object(Bucket=self.bucket, Key=self.key(path), ChecksumMode="ENABLED")
            except Exception as exc:
                if is_missing(exc):
                    return None
                raise
        return h["ContentLength"], h.get("ETag", ""), h.get("ChecksumSHA256", "")

    def put(self, path: str, data: bytes, *, create_only: bool = False, sha256_b64: str = "",
            retain: Retention | None = None) -> bool:
        """One atomic PUT; with create_only, False (and nothing written) if the key exists.

        create_only is a conditional write (If-None-Match: *): S3 refuses, server-side and
        atomically, to replace an object (two racers: one 200, one 412 -> False, or 409
        ConditionalRequestConflict, transient: the retry gets 412). On a bucket with Object
        Lock an overwrite would otherwise quietly add a version. A server that answers 501 to
        the condition is switched to HEAD-then-PUT for the life of this place: racy (two
        writers can both see no object; the later PUT wins), which the repository can live with
        (its objects are content-addressed or named uniquely by their writer); a server that
        silently ignores the header cannot be detected here.
        With sha256_b64 (or on the lean client, which signs the body's SHA-256) the PUT carries
        the SHA-256 and, for a body in memory, Content-MD5, which the server checks (MD5 is
        what every S3-compatible server verifies; SHA-256 also satisfies Object Lock's
        "checksum required" rule); otherwise a CRC32. `retain`: Object Lock retention for the object (see Retention)."""
        if isinstance(self._hot, LeanS3Client) and not sha256_b64:
            sha256_b64 = base64.b64encode(hashlib.sha256(data).digest()).decode()
        if sha256_b64:
            checksum = {"ChecksumAlgorithm": "SHA256", "ChecksumSHA256": sha256_b64}
            if isinstance(data, (bytes, bytearray, memoryview)):  # not a copy's body over its buffers
                checksum["ContentMD5"] = base64.b64encode(hashlib.md5(data).digest()).decode()
        else:
            checksum = {"ChecksumCRC32": crc32_b64(data)}
        if retain is not None:
            checksum.update(ObjectLockMode=retain.mode, ObjectLockRetainUntilDate=retain.until)
        client = self.client if retain is not None else self._hot  # the lean client sends no lock headers
        with s3_errors(self.url_of(path)):
            if create_only and self._conditional_put:
                try:
                    client.put_object(Bucket=self.bucket, Key=self.key(path), Body=data, IfNoneMatch="*", **checksum)
                    return True
                except Exception as exc:
                    if error_code(exc) in CHANGED:
                        return False
                    if error_code(exc) != "NotImplemented" and http_status(exc) != 501:
                        raise
                    self._conditional_put = False
            if create_only and self.head(path) is not None:  # the fallback: racy, see above
                return False
            client.put_object(Bucket=self.bucket, Key=self.key(path), Body=data, **checksum)
            return True

    def delete(self, path: str) -> None:
        with s3_errors(self.url_of(path)):
            try:
                self._hot.delete_object(Bucket=self.bucket, Key=self.key(path))
            except Exception as exc:
                if not is_missing(exc):  # S3 answers 204 anyway; others may 404
                    raise

    def delete_many(self, paths: list[str]) -> None:
        """DeleteObjects, 1,000 keys a request (S3's limit): a copy's journal or a pruned copy
        is one request instead of one per file."""
        for start in range(0, len(paths), 1000):
            batch = [{"Key": self.key(p)} for p in paths[start:start + 1000]]
            with s3_errors(self.url):
                result = self.client.delete_objects(Bucket=self.bucket, Delete={"Objects": batch, "Quiet": True})
            failed = [e for e in result.get("Errors", ()) if e.get("Code") not in ("NoSuchKey", "404", "NotFound")]
            if failed:
                kind = TransientPlaceError if failed[0].get("Code") in TRANSIENT_CODES else PermanentPlaceError
                raise kind(f"{self.url}: could not delete {failed[0].get('Key')}: {failed[0].get('Code')} "
                           f"{failed[0].get('Message', '')}".rstrip())

    # -- multipart uploads ------------------------------------------------------------------
    def pending_uploads(self, prefix: str = "") -> list[Upload]:
        """Multipart uploads under `prefix` (a path, or a directory ending in '/')."""
        cut = len(self.prefix) + 1 if self.prefix else 0
        out: list[Upload] = []
        full = self.key(prefix) if prefix else (f"{self.prefix}/" if self.prefix else "")
        with s3_errors(self.url_of(prefix)):
            pages = self.client.get_paginator("list_multipart_uploads").paginate(Bucket=self.bucket, Prefix=full)
            for page in pages:
                for u in page.get("Uploads", ()):
                    out.append(Upload(u["Key"][cut:], u["UploadId"], u["Initiated"].timestamp()))
        return out

    def abort(self, upload: Upload) -> None:
        with s3_errors(self.url_of(upload.path)):
            try:
                self.client.abort_multipart_upload(Bucket=self.bucket, Key=self.key(upload.path),
                                                   UploadId=upload.upload_id)
            except Exception as exc:
                if error_code(exc) not in ("NoSuchUpload", "404"):
                    raise

    def list_parts(self, path: str, upload_id: str) -> dict[int, tuple[int, str, str]]:
        """part number -> (size, ETag without quotes, base64 CRC32 or '') of stored parts."""
        parts: dict[int, tuple[int, str, str]] = {}
        with s3_errors(self.url_of(path)):
            pages = self.client.get_paginator("list_parts").paginate(
                Bucket=self.bucket, Key=self.key(path), UploadId=upload_id)
            for page in pages:
                for p in page.get("Parts", ()):
                    parts[p["PartNumber"]] = (p["Size"], p["ETag"].strip('"'), p.get("ChecksumCRC32", ""))
        return parts

    def writer(self, path: str, size: int, part_size: int) -> "S3Writer":
        from dr.kits.places.s3writing import S3Writer

        return S3Writer(self, path, size, part_size)


class S3Reader:
    """Fills caller-owned buffers from one GetObject stream, in slices of READ_SLICE bytes:
    never a large temporary object per read, so memory stays what the caller's buffers are.
    A stream that breaks raises TransientPlaceError; the reader is spent then."""

    def __init__(self, place: S3Place, path: str, offset: int = 0) -> None:
        self._where = place.url_of(path)
        self._body = place._open(path, offset)
        self._socket = _socket_response(self._body)

    def readinto(self, view: memoryview) -> int:
        """Fill `view`; fewer bytes only at the end of the object."""
        got = 0
        with s3_errors(self._where):
            while got < len(view) and self._body is not None:
                n = self._read_slice(view[got:got + READ_SLICE])
                if n == 0:
                    break
                got += n
        return got

    def _read_slice(self, view: memoryview) -> int:
        if self._socket is None:
            return self._body.readinto(view)
        try:
            n = self._socket.readinto(view)
        except (http.client.IncompleteRead, TimeoutError) as exc:  # cut or stalled mid-body
            raise TransientPlaceError(f"{self._where}: {type(exc).__name__}") from None
        if n == 0 or self._socket.isclosed():
            self._body._raw_stream.release_conn()  # read to its end: the connection is reusable
            self._socket = None
            self._body = None
        return n

    def close(self) -> None:
        if self._body is not None:
            self._body.close()  # before its end: the connection is dropped, never reused
            self._body = None
            self._socket = None


def _socket_response(body) -> http.client.HTTPResponse | None:
    """The standard library's response under botocore's StreamingBody and urllib3's response,
    to read into the caller's buffers directly. Through urllib3, every slice was read into a
    new bytes object and copied again: 0.26 s of CPU per 256 MiB against 0.09 s directly
    (measured against moto), a large part of what a copy of 64 MB shards costs dr (issue 16).
    Only for a plain body: no content decoding and no checksum-validating wrapper (the
    repository's client validates none: response_checksum_validation when_required), else
    None and the reads go through botocore as before."""
    if "botocore.response" not in sys.modules:
        return None  # the lean client's body (it fills buffers itself)
    import botocore.response
    import urllib3.response

    raw = getattr(body, "_raw_stream", None)
    # exactly urllib3's response over the standard library's: anything wrapped around either
    # (a checksum validator, a test's fault injector) must see every read, so it keeps them
    if type(body) is not botocore.response.StreamingBody or type(raw) is not urllib3.response.HTTPResponse:
        return None
    response = getattr(raw, "_fp", None)
    if not isinstance(response, http.client.HTTPResponse):
        return None
    if raw.headers.get("content-encoding") or response.chunked or response.length is None:
        return None
    return response
