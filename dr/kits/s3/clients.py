"""How dr makes S3 clients and reads their errors: one configuration for every S3 user.

Everything in dr that talks to S3 does it through the kit's S3 places (dr/kits/places/s3.py:
checkpoints, their copies, MLflow weight copies, and the repository's S3Store over one) and
their lean client (lean.py); this module is their one configuration and error judgement.

Why the configuration is what it is:
- botocore's own retries are off (total_max_attempts=1 is exactly one HTTP request;
  "max_attempts": 1 would allow one botocore retry, measured: 2 requests on a 503). Retries
  live in one wrapper (RetryingPlace), where they are bounded, visible and the same for
  every backend.
- Explicit timeouts: a connection that cannot be made in CONNECT_TIMEOUT fails, and a read
  that stalls READ_TIMEOUT fails (both transient), instead of waiting forever.
- Path-style addressing: S3-compatible servers on a plain host:port (MinIO, Ceph, moto) do
  not resolve bucket subdomains.
- Checksums only where dr passes them (botocore's default adds a CRC32 pass to every
  request), and no SigV4 payload hash (over plain http botocore would hash every body once
  more): every body dr sends carries its own Content-MD5, CRC32 or SHA-256, which the server
  verifies, and GETs that want verification ask for it (ChecksumMode=ENABLED).

The error split (is_transient) is what the wrapper retries on: throttling (a throttling code,
or HTTP 429), timeouts, any 5xx but 501 NotImplemented (which says a feature is missing, not
that the server is unwell), and connection failures anywhere in a request: while connecting,
sending the body, waiting for the answer or reading its body (an error body included).
The lean client's errors (lean.py) are judged by the same rules. botocore is imported
only to build a client: an exception of its types cannot exist before it was loaded, so
judging one without botocore loaded means it is not botocore's (the lean path never loads it).
"""

from __future__ import annotations

import sys
from urllib.parse import urlsplit, urlunsplit

# the timeouts are the lean client's too: both clients wait alike
from dr.kits.s3.lean import CONNECT_TIMEOUT, READ_TIMEOUT, LeanResponseError, LeanTransportError

TRANSIENT_CODES = frozenset({
    "SlowDown", "Throttling", "ThrottlingException", "RequestThrottled", "TooManyRequests",
    "RequestTimeout", "RequestTimeoutException", "InternalError", "ServiceUnavailable",
    "ConditionalRequestConflict", "OperationAborted",
})
MISSING_CODES = frozenset({"NoSuchKey", "404", "NotFound"})


def transport_errors() -> tuple[type[BaseException], ...]:
    """Network-level failures of botocore (loaded): the request may or may not have reached the server."""
    import botocore.exceptions
    import urllib3.exceptions

    return (
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


def _botocore_exceptions():
    """botocore.exceptions when botocore is loaded, else None (see the module docstring)."""
    return sys.modules.get("botocore.exceptions")


def client_config(max_pool_connections: int = 32):
    """The botocore configuration of every dr S3 client (see the module docstring)."""
    import botocore.config

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


def _client_error(exc: BaseException):
    """The botocore ClientError `exc` is, or None."""
    exceptions = _botocore_exceptions()
    return exc if exceptions is not None and isinstance(exc, exceptions.ClientError) else None


def error_code(exc: BaseException) -> str:
    """S3's error code of an error answer ('NoSuchKey', 'SlowDown', '404'...); '' for others."""
    if isinstance(exc, LeanResponseError):
        return exc.code
    if _client_error(exc) is None:
        return ""
    return str(exc.response.get("Error", {}).get("Code", ""))


def http_status(exc: BaseException) -> int | None:
    if isinstance(exc, LeanResponseError):
        return exc.status
    if _client_error(exc) is None:
        return None
    return exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")


def is_missing(exc: BaseException) -> bool:
    return error_code(exc) in MISSING_CODES


def is_transient(exc: BaseException) -> bool:
    """Whether retrying the same request may succeed: throttled, timed out, 5xx, connection lost."""
    if isinstance(exc, LeanResponseError) or _client_error(exc) is not None:
        status = http_status(exc) or 0
        return error_code(exc) in TRANSIENT_CODES or status == 429 or (500 <= status < 600 and status != 501)
    if isinstance(exc, LeanTransportError):
        return exc.transient  # false for a certificate that does not verify
    exceptions = _botocore_exceptions()
    if exceptions is None:
        return isinstance(exc, ConnectionError)
    # a certificate that does not verify will not verify on a retry either
    return isinstance(exc, transport_errors()) and not isinstance(exc, exceptions.SSLError)


def describe(exc: BaseException) -> str:
    """'Code (HTTP status) message' for an error answer, the type's name for anything else
    (for the lean client's transport errors: the failed call's).

    Only S3's human text is used, never the response's other fields (AWSAccessKeyId,
    StringToSign... which some errors carry).
    """
    if isinstance(exc, LeanResponseError) or _client_error(exc) is not None:
        text = exc.message if isinstance(exc, LeanResponseError) else exc.response.get("Error", {}).get("Message", "")
        return f"{error_code(exc)} (HTTP {http_status(exc)}) {text}".rstrip()
    if isinstance(exc, LeanTransportError):
        return type(exc.cause).__name__
    return type(exc).__name__


def safe_url(url: str) -> str:
    """An endpoint URL without any user:password@ part, for messages and records."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, "", ""))
