"""How dr makes S3 clients and reads their errors: one configuration for every S3 user.

Two kinds of code talk to S3: the repository's S3Store (s3.py) and the checkpoint exporter's
places (dr/exporters/checkpointing/places/s3.py). They share this module so that both make
the same requests and judge failures the same way. (Exporters may import the repository,
never the reverse, so it lives here.)

Why the configuration is what it is:
- botocore's own retries are off (total_max_attempts=1 is exactly one HTTP request;
  "max_attempts": 1 would allow one botocore retry, measured: 2 requests on a 503). Retries
  live in wrappers (RetryingStore, RetryingPlace), where they are bounded, visible and the
  same for every backend.
- Explicit timeouts: a connection that cannot be made in CONNECT_TIMEOUT fails, and a read
  that stalls READ_TIMEOUT fails (both transient), instead of waiting forever.
- Path-style addressing: S3-compatible servers on a plain host:port (MinIO, Ceph, moto) do
  not resolve bucket subdomains.
- Checksums only where dr passes them (botocore's default adds a CRC32 pass to every
  request), and no SigV4 payload hash (over plain http botocore would hash every body once
  more): every body dr sends carries its own Content-MD5, CRC32 or SHA-256, which the server
  verifies, and GETs that want verification ask for it (ChecksumMode=ENABLED).

The error split (is_transient) is what both wrappers retry on: throttling (a throttling code,
or HTTP 429), timeouts, any 5xx but 501 NotImplemented (which says a feature is missing, not
that the server is unwell), and connection failures anywhere in a request: while connecting,
sending the body, waiting for the answer or reading its body (an error body included).
"""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

import botocore.config
import botocore.exceptions
import urllib3.exceptions

CONNECT_TIMEOUT = 10  # seconds
READ_TIMEOUT = 60  # seconds without a byte

TRANSIENT_CODES = frozenset({
    "SlowDown", "Throttling", "ThrottlingException", "RequestThrottled", "TooManyRequests",
    "RequestTimeout", "RequestTimeoutException", "InternalError", "ServiceUnavailable",
    "ConditionalRequestConflict", "OperationAborted",
})
MISSING_CODES = frozenset({"NoSuchKey", "404", "NotFound"})
# Network-level failures: the request may or may not have reached the server.
TRANSPORT_ERRORS = (
    botocore.exceptions.ConnectionError,  # EndpointConnectionError, ConnectTimeoutError...
    botocore.exceptions.HTTPClientError,  # ConnectionClosedError, ReadTimeoutError, and what
    #   botocore wraps of any other failure while sending (a reset mid-upload)
    botocore.exceptions.ResponseStreamingError,
    botocore.exceptions.IncompleteReadError,
    botocore.exceptions.FlexibleChecksumError,  # bytes changed in transit: fetch again
    urllib3.exceptions.ProtocolError,  # a reset while reading a body, if botocore lets it through
    urllib3.exceptions.ReadTimeoutError,
    ConnectionError,  # ConnectionResetError and friends, from the socket itself
)


def client_config(max_pool_connections: int = 32) -> botocore.config.Config:
    """The botocore configuration of every dr S3 client (see the module docstring)."""
    return botocore.config.Config(
        retries={"total_max_attempts": 1},
        connect_timeout=CONNECT_TIMEOUT,
        read_timeout=READ_TIMEOUT,
        max_pool_connections=max_pool_connections,
        request_checksum_calculation="when_required",
        response_checksum_validation="when_required",
        s3={"addressing_style": "path", "payload_signing_enabled": False},
    )


def new_client(session, endpoint_url: str | None = None, max_pool_connections: int = 32):
    """An S3 client from a boto3 session, for AWS (no endpoint) or an S3-compatible endpoint."""
    endpoint = endpoint_url.rstrip("/") if endpoint_url else None
    return session.client("s3", endpoint_url=endpoint,
                          config=client_config(max_pool_connections=max_pool_connections))


def error_code(exc: BaseException) -> str:
    """S3's error code of a ClientError ('NoSuchKey', 'SlowDown', '404'...); '' for others."""
    if not isinstance(exc, botocore.exceptions.ClientError):
        return ""
    return str(exc.response.get("Error", {}).get("Code", ""))


def http_status(exc: BaseException) -> int | None:
    if not isinstance(exc, botocore.exceptions.ClientError):
        return None
    return exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")


def is_missing(exc: BaseException) -> bool:
    return error_code(exc) in MISSING_CODES


def is_transient(exc: BaseException) -> bool:
    """Whether retrying the same request may succeed: throttled, timed out, 5xx, connection lost."""
    if isinstance(exc, botocore.exceptions.ClientError):
        status = http_status(exc) or 0
        return error_code(exc) in TRANSIENT_CODES or status == 429 or (500 <= status < 600 and status != 501)
    # a certificate that does not verify will not verify on a retry either
    return isinstance(exc, TRANSPORT_ERRORS) and not isinstance(exc, botocore.exceptions.SSLError)


def describe(exc: BaseException) -> str:
    """'Code (HTTP status) message' for a ClientError, the type's name for anything else.

    Only S3's human text is used, never the response's other fields (AWSAccessKeyId,
    StringToSign... which some errors carry).
    """
    if isinstance(exc, botocore.exceptions.ClientError):
        text = exc.response.get("Error", {}).get("Message", "")
        return f"{error_code(exc)} (HTTP {http_status(exc)}) {text}".rstrip()
    return type(exc).__name__


def safe_url(url: str) -> str:
    """An endpoint URL without any user:password@ part, for messages and records."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, "", ""))
