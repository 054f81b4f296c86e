"""How an S3 place's failures become the place contract's errors (one set of rules for every
request of dr.kits.places.s3 and its writer and Object Lock calls): missing, changed since listed,
worth retrying (throttling, 5xx, timeouts, connection resets, also mid-body), or permanent.
Messages name the object, the S3 code and status, never credentials."""

from __future__ import annotations

import sys
from contextlib import contextmanager
from typing import Iterator

from dr.kits.places.contract import PermanentPlaceError, PlaceError, PlaceMissing, SourceChanged, TransientPlaceError
from dr.kits.s3.clients import describe, error_code, is_missing, is_transient
from dr.kits.s3.lean import LeanResponseError, LeanTransportError

CHANGED = ("PreconditionFailed", "412")  # an If-Match or If-None-Match condition failed


# boto3, botocore and urllib3 are imported where an S3 place first needs them, not with this
# module: the checkpoints exporter loads it to validate a plan, and a plan whose checkpoints are
# all on local disks (or a `dr audit` of any plan) would pay ~0.3 s of every start for them.
def _native() -> tuple[type[BaseException], ...]:
    """What a request can raise besides a PlaceError: the service's answer, botocore's and
    urllib3's transport errors (only once botocore is loaded: before that, none can have been
    raised, and a place on the lean client never loads it), the lean client's, the socket's."""
    lean = (LeanResponseError, LeanTransportError, OSError)
    if "botocore.exceptions" not in sys.modules:
        return lean
    import botocore.exceptions
    import urllib3.exceptions

    return lean + (botocore.exceptions.ClientError, botocore.exceptions.BotoCoreError, urllib3.exceptions.HTTPError)


@contextmanager
def s3_errors(where: str) -> Iterator[None]:
    """Raise what a request raised as the place contract's error (see place_error)."""
    try:
        yield
    except PlaceError:
        raise
    except Exception as exc:
        if isinstance(exc, _native()):
            raise place_error(exc, where) from exc
        raise


def place_error(exc: BaseException, where: str) -> PlaceError:
    """Missing -> PlaceMissing, replaced since listed -> SourceChanged, worth retrying ->
    TransientPlaceError, else PermanentPlaceError; the message names the object, the S3 code
    and status, never credentials."""
    if is_missing(exc):
        return PlaceMissing(f"{where}: not found")
    if error_code(exc) in CHANGED:
        return SourceChanged(f"{where} changed since it was listed")
    kind = TransientPlaceError if is_transient(exc) else PermanentPlaceError
    return kind(f"{where}: {describe(exc)}")
