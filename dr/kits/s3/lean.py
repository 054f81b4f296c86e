"""A lean S3 client for the S3 place's hot requests (the repository's), on the standard library alone.

Why it exists: an unchanged `dr backup` to S3 spent most of its time starting up, and the
largest part was botocore: importing it and boto3, and building an S3 client from botocore's
service model, cost more than the whole run of restic (docs/benchmarks.md, "The cost of an
unchanged backup"). The repository's store (an S3 place, dr/kits/places/s3.py) makes only a
few kinds of request (put, get, ranged or conditional get, head, list, delete of one object;
no multipart, no copies), so this client makes them itself, signed with SigV4, over
http.client keep-alive connections.

When it is used (signing.static_setup): static keys in the environment, a known region,
nothing in the environment or config file that would make botocore route or sign differently.
Otherwise, and for everything else a place does (Object Lock, versions, multipart), botocore is used,
built on first need. A server that answers with a redirect or a region error (what botocore
would have followed or corrected itself) switches this client to botocore for good, and the
request is repeated there. DR_S3_CLIENT=botocore switches it off.

It makes the same requests the botocore client is configured to make (clients.py): one
HTTP request per call (retries are RetryingPlace's), path-style addressing, the checksums
S3Place passes and no others, ChecksumMode where asked (a returned SHA-256 is checked against the
body at its end), the same timeouts. Its answers have the fields of botocore's that S3Place
reads, and its errors what S3Place's error mapping reads: S3's
error code, the HTTP status and S3's message (LeanResponseError), or the failed transport call
(LeanTransportError, transient unless it is a certificate failure).
"""

from __future__ import annotations

import base64
import hashlib
import http.client
import select
import threading
from datetime import datetime, timezone
from typing import Callable, Iterator
from urllib.parse import unquote_plus, urlsplit

from dr.kits.s3.signing import EMPTY_SHA256, StaticSetup, quote_path, sign

CONNECT_TIMEOUT = 10  # seconds (clients.py configures botocore with these too)
READ_TIMEOUT = 60  # seconds without a byte
MAX_IDLE = 32  # kept-alive connections (the botocore client's pool size)
# Answers botocore would have followed to another region or endpoint itself.
REDIRECT_CODES = frozenset({"PermanentRedirect", "TemporaryRedirect", "AuthorizationHeaderMalformed",
                            "IllegalLocationConstraintException"})


class LeanResponseError(Exception):
    """S3 answered with an error: its code ('NoSuchKey', '404' for a bodiless HEAD), status, message."""

    def __init__(self, code: str, status: int, message: str):
        super().__init__(f"{code} (HTTP {status}) {message}".rstrip())
        self.code, self.status, self.message = code, status, message


class ChecksumMismatch(ValueError):
    """The body's SHA-256 is not the one S3 returned: the bytes changed on the way."""


class LeanTransportError(Exception):
    """The request failed on the way (connect, send, receive); the cause is chained."""

    def __init__(self, cause: BaseException):
        super().__init__(f"{type(cause).__name__}: {cause}")
        self.cause = cause
        self.transient = not _is_certificate_failure(cause)


def _is_certificate_failure(exc: BaseException) -> bool:
    import sys

    ssl = sys.modules.get("ssl")  # loaded whenever an https connection was made
    return ssl is not None and isinstance(exc, ssl.SSLCertVerificationError)


class LeanS3Client:
    """The subset of botocore's S3 client that S3Place's hot path calls, same names and shapes."""

    def __init__(self, setup: StaticSetup, botocore_client: Callable[[], object],
                 read_timeout: float = READ_TIMEOUT):
        self._setup = setup
        self._read_timeout = read_timeout
        parts = urlsplit(setup.endpoint)
        self._https = parts.scheme == "https"
        self._host = parts.netloc
        self._base = parts.path.rstrip("/")
        self._make_botocore = botocore_client
        self._botocore_client = None
        self._switched = False  # set once a redirect says botocore must take over
        self._idle: list[http.client.HTTPConnection] = []
        self._lock = threading.Lock()
        self._ssl_context = None

    # -- the calls S3Place makes -----------------------------------------------------------
    def put_object(self, *, Bucket: str, Key: str, Body: bytes, ContentMD5: str, ChecksumSHA256: str,
                   ChecksumAlgorithm: str = "SHA256", IfNoneMatch: str | None = None) -> dict:
        headers = {"content-md5": ContentMD5, "x-amz-checksum-sha256": ChecksumSHA256,
                   "x-amz-sdk-checksum-algorithm": ChecksumAlgorithm, "content-length": str(len(Body))}
        if IfNoneMatch:
            headers["if-none-match"] = IfNoneMatch
        payload = base64.b64decode(ChecksumSHA256).hex()  # the body's SHA-256, computed once by its caller
        kwargs = dict(Bucket=Bucket, Key=Key, Body=Body, ContentMD5=ContentMD5, ChecksumSHA256=ChecksumSHA256,
                      ChecksumAlgorithm=ChecksumAlgorithm, **({"IfNoneMatch": IfNoneMatch} if IfNoneMatch else {}))
        return self._call("put_object", kwargs, lambda: self._simple("PUT", Bucket, Key, {}, headers, Body, payload))

    def get_object(self, *, Bucket: str, Key: str, ChecksumMode: str | None = None, Range: str | None = None,
                   IfMatch: str | None = None) -> dict:
        headers = {name: value for name, value in (("x-amz-checksum-mode", ChecksumMode), ("range", Range),
                                                    ("if-match", IfMatch)) if value}
        kwargs = dict(Bucket=Bucket, Key=Key, **{k: v for k, v in (("ChecksumMode", ChecksumMode), ("Range", Range),
                                                                    ("IfMatch", IfMatch)) if v})
        return self._call("get_object", kwargs, lambda: {"Body": self._stream(Bucket, Key, headers)})

    def head_object(self, *, Bucket: str, Key: str, ChecksumMode: str | None = None) -> dict:
        """botocore's answer's fields the places read: ContentLength, ETag, ChecksumSHA256."""
        headers = {"x-amz-checksum-mode": ChecksumMode} if ChecksumMode else {}
        kwargs = dict(Bucket=Bucket, Key=Key, **({"ChecksumMode": ChecksumMode} if ChecksumMode else {}))
        return self._call("head_object", kwargs, lambda: _head_fields(self._simple("HEAD", Bucket, Key, {}, headers)))

    def delete_object(self, *, Bucket: str, Key: str) -> dict:
        return self._call("delete_object", dict(Bucket=Bucket, Key=Key),
                          lambda: self._simple("DELETE", Bucket, Key, {}, {}))

    def get_paginator(self, operation: str) -> "_ListPaginator":
        if operation != "list_objects_v2":
            raise ValueError(f"the lean S3 client lists objects only, not {operation}")
        return _ListPaginator(self)

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()
        if self._botocore_client is not None:
            self._botocore_client.close()

    # -- botocore, for what this client does not do ----------------------------------------
    def botocore(self):
        """The botocore S3 client of the same setup, built on first need (Object Lock calls,
        or after a redirect)."""
        with self._lock:
            if self._botocore_client is None:
                self._botocore_client = self._make_botocore()
            return self._botocore_client

    def _call(self, name: str, kwargs: dict, lean: Callable[[], dict]) -> dict:
        if not self._switched:
            try:
                return lean()
            except LeanResponseError as exc:
                if exc.code not in REDIRECT_CODES and exc.status not in (301, 307):
                    raise
                self._switched = True
        return getattr(self.botocore(), name)(**kwargs)

    def list_page(self, bucket: str, prefix: str, token: str | None) -> dict:
        kwargs = dict(Bucket=bucket, Prefix=prefix, **({"ContinuationToken": token} if token else {}))
        return self._call("list_objects_v2", kwargs, lambda: self._list(bucket, prefix, token))

    # -- requests ----------------------------------------------------------------------------
    def _simple(self, method: str, bucket: str, key: str, query: dict, headers: dict,
                body: bytes = b"", payload: str = EMPTY_SHA256) -> dict:
        response, conn = self._request(method, bucket, key, query, headers, body, payload)
        data = response.read()
        self._release(conn, response)
        return {"Body": data, "Headers": response.headers}

    def _list(self, bucket: str, prefix: str, token: str | None) -> dict:
        query = {"list-type": "2", "prefix": prefix, "encoding-type": "url"}
        if token:
            query["continuation-token"] = token
        page = self._simple("GET", bucket, "", query, {})["Body"]
        return _parse_listing(page)

    def _stream(self, bucket: str, key: str, headers: dict) -> "_Stream":
        response, conn = self._request("GET", bucket, key, {}, headers)
        return _Stream(self, conn, response)

    def _request(self, method: str, bucket: str, key: str, query: dict, headers: dict,
                 body: bytes = b"", payload: str = EMPTY_SHA256):
        path = quote_path(f"{self._base}/{bucket}/{key}" if key else f"{self._base}/{bucket}")
        signed = sign(self._setup, method, self._host, path, query, headers, payload)
        target = path + ("?" + _query_string(query) if query else "")
        conn = None
        try:
            conn = self._connection()
            conn.request(method, target, body=body or None, headers=signed)
            response = conn.getresponse()
        except Exception as exc:
            if conn is not None:
                conn.close()
            raise LeanTransportError(exc) from exc
        if response.status >= 300:
            try:
                text = response.read()
            except Exception as exc:
                conn.close()
                raise LeanTransportError(exc) from exc
            self._release(conn, response)
            raise _response_error(response, text)
        return response, conn

    def _connection(self) -> http.client.HTTPConnection:
        with self._lock:
            while self._idle:
                conn = self._idle.pop()
                if not _dropped(conn):
                    return conn
                conn.close()
        if self._https:
            conn = http.client.HTTPSConnection(self._host, timeout=CONNECT_TIMEOUT, context=self._context())
        else:
            conn = http.client.HTTPConnection(self._host, timeout=CONNECT_TIMEOUT)
        try:
            conn.connect()  # CONNECT_TIMEOUT to connect; from then on READ_TIMEOUT per read
            conn.sock.settimeout(self._read_timeout)
        except BaseException:
            conn.close()
            raise
        return conn

    def _context(self):
        with self._lock:
            if self._ssl_context is None:
                import ssl

                self._ssl_context = ssl.create_default_context(cafile=self._setup.ca_bundle or _certifi())
            return self._ssl_context

    def _release(self, conn: http.client.HTTPConnection, response: http.client.HTTPResponse) -> None:
        """Keep the connection for the next request, unless the server said it closes it."""
        if response.will_close or conn.sock is None:
            conn.close()
            return
        with self._lock:
            if len(self._idle) < MAX_IDLE:
                self._idle.append(conn)
                return
        conn.close()


def _certifi() -> str | None:
    """botocore verifies against certifi's bundle when it is installed; so does this client."""
    try:
        import certifi
    except ImportError:
        return None
    return certifi.where()


def _dropped(conn: http.client.HTTPConnection) -> bool:
    """A kept-alive connection the server closed meanwhile (readable with nothing asked)."""
    if conn.sock is None:
        return True
    try:
        return bool(select.select([conn.sock], [], [], 0)[0])
    except (OSError, ValueError):
        return True


def _query_string(query: dict[str, str]) -> str:
    from dr.kits.s3.signing import canonical_query

    return canonical_query(query)


def _response_error(response: http.client.HTTPResponse, text: bytes) -> LeanResponseError:
    code, message = str(response.status), response.reason or ""
    if text:
        import xml.etree.ElementTree as ElementTree

        try:
            root = ElementTree.fromstring(text)
        except ElementTree.ParseError:
            pass
        else:
            code = root.findtext("Code") or code
            message = root.findtext("Message") or message
    return LeanResponseError(code, response.status, message)


def _head_fields(answer: dict) -> dict:
    headers = answer["Headers"]
    out = {"ContentLength": int(headers.get("content-length") or 0), "ETag": headers.get("etag", "")}
    if headers.get("x-amz-checksum-sha256"):
        out["ChecksumSHA256"] = headers["x-amz-checksum-sha256"]
    return out


def _parse_listing(text: bytes) -> dict:
    import xml.etree.ElementTree as ElementTree

    root = ElementTree.fromstring(text)
    ns = root.tag[: root.tag.index("}") + 1] if root.tag.startswith("{") else ""
    encoded = (root.findtext(f"{ns}EncodingType") or "").lower() == "url"
    contents = [{"Key": unquote_plus(item.findtext(f"{ns}Key")) if encoded else item.findtext(f"{ns}Key"),
                 "Size": int(item.findtext(f"{ns}Size") or 0), "ETag": item.findtext(f"{ns}ETag") or "",
                 "LastModified": _timestamp(item.findtext(f"{ns}LastModified"))}
                for item in root.iter(f"{ns}Contents")]
    page = {"Contents": contents, "IsTruncated": (root.findtext(f"{ns}IsTruncated") or "").lower() == "true"}
    if page["IsTruncated"]:
        page["NextContinuationToken"] = root.findtext(f"{ns}NextContinuationToken")
    return page


def _timestamp(text: str | None) -> datetime:
    """A listing's LastModified ('2026-12-03T06:00:00.000Z'), as botocore gives it: aware, UTC."""
    return datetime.fromisoformat(text.replace("Z", "+00:00")) if text else datetime.fromtimestamp(0, timezone.utc)


class _ListPaginator:
    def __init__(self, client: LeanS3Client):
        self._client = client

    def paginate(self, *, Bucket: str, Prefix: str = "") -> Iterator[dict]:
        token = None
        while True:
            page = self._client.list_page(Bucket, Prefix, token)
            yield page
            token = page.get("NextContinuationToken")
            if not page.get("IsTruncated") or not token:
                return


class _Stream:
    """A GetObject body: read(n) and close(); the connection goes back to the pool once the
    body was read to its end. A SHA-256 the server returned is checked at the end (a mismatch:
    the bytes changed on the way, transient, as botocore's FlexibleChecksumError)."""

    def __init__(self, client: LeanS3Client, conn: http.client.HTTPConnection, response: http.client.HTTPResponse):
        self._client, self._conn, self._response = client, conn, response
        expected = response.getheader("x-amz-checksum-sha256") or ""
        whole = (response.getheader("x-amz-checksum-type") or "FULL_OBJECT").upper() == "FULL_OBJECT"
        self._expected = expected if expected and "-" not in expected and whole else ""
        self._hash = hashlib.sha256() if self._expected else None
        self._done = False

    def read(self, size: int | None = None) -> bytes:
        if self._done:
            return b""
        try:
            data = self._response.read() if size is None or size < 0 else self._response.read(size)
        except Exception as exc:
            self._abandon()
            raise LeanTransportError(exc) from exc
        if self._hash is not None:
            self._hash.update(data)
        if size is None or size < 0 or not data or self._response.isclosed():
            self._finish()
        return data

    def _finish(self) -> None:
        if not self._response.isclosed() and self._response.length:
            return  # more to come (a read that returned less than asked)
        self._done = True
        if self._hash is not None and base64.b64encode(self._hash.digest()).decode() != self._expected:
            self._abandon()
            raise LeanTransportError(ChecksumMismatch("the body does not match the SHA-256 S3 returned"))
        self._client._release(self._conn, self._response)
        self._conn = None

    def _abandon(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def readinto(self, view) -> int:
        """read(), into the caller's buffer (the places' readers fill buffers)."""
        data = self.read(len(view))
        view[:len(data)] = data
        return len(data)

    def close(self) -> None:
        if not self._done:
            self._abandon()  # not read to its end: the connection cannot be reused
        self._done = True
