"""dr's one retry policy (dr.kits.retrying): what it retries, how long it waits, what it raises."""

from __future__ import annotations

import pytest

from dr.kits.places.contract import TransientPlaceError
from dr.kits.oci.errors import TemporaryError
from dr.exporters.kubernetes.requesting import TemporaryFailure
from dr.kits.retrying import Transient, policy, retry_after
from dr.repository.stores.base import TransientStoreError


class Flaky:
    """Fails with `errors` in turn, then answers."""

    def __init__(self, *errors: BaseException):
        self.errors, self.calls = list(errors), 0

    def __call__(self) -> str:
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)
        return "answer"


def test_every_layers_transient_error_is_one_type():
    for error in (TransientStoreError("s3"), TransientPlaceError("place"), TemporaryError("registry"),
                  TemporaryFailure(503, "ServiceUnavailable", "api")):
        assert isinstance(error, Transient), type(error)


def test_transient_errors_are_retried_with_jittered_backoff_under_the_cap():
    sleeps: list[float] = []
    call = Flaky(Transient("1"), Transient("2"), Transient("3"))
    assert policy(5, 1.0, 3.0, sleep=sleeps.append)(call) == "answer" and call.calls == 4
    assert len(sleeps) == 3 and all(0 <= s <= 3.0 for s in sleeps)


def test_what_the_server_asks_is_waited_for():
    asked = TemporaryError("registry: HTTP 429", retry_after=7.5)
    sleeps: list[float] = []
    assert policy(3, 0.01, 0.02, sleep=sleeps.append)(Flaky(asked)) == "answer"
    assert sleeps == [7.5]


def test_a_permanent_error_is_raised_at_once_and_the_last_transient_one_as_it_is():
    sleeps: list[float] = []
    permanent = Flaky(ValueError("bad request"))
    with pytest.raises(ValueError, match="bad request"):
        policy(5, 0.01, 0.1, sleep=sleeps.append)(permanent)
    assert permanent.calls == 1 and sleeps == []
    last = Transient("third")
    with pytest.raises(Transient) as raised:
        policy(3, 0.01, 0.1, sleep=sleeps.append)(Flaky(Transient("first"), Transient("second"), last))
    assert raised.value is last  # not a tenacity RetryError


def test_retry_on_narrows_to_one_layers_errors():
    other = Flaky(TransientPlaceError("a place's error, in a store's loop"))
    with pytest.raises(TransientPlaceError):
        policy(5, 0.01, 0.1, retry_on=TransientStoreError, sleep=lambda s: None)(other)
    assert other.calls == 1
    with pytest.raises(ValueError, match="at least 1"):
        policy(0, 0.1, 1.0)


@pytest.mark.parametrize("headers, cap, seconds", [
    ({"Retry-After": "7"}, 60.0, 7.0), ({"Retry-After": "2.5"}, 60.0, 2.5), ({"Retry-After": "900"}, 120.0, 120.0),
    ({"Retry-After": "Wed, 21 Oct 2026 07:28:00 GMT"}, 60.0, None), ({"Retry-After": ""}, 60.0, None), ({}, 60.0, None),
    (None, 60.0, None)])
def test_retry_after_is_read_in_seconds_capped_and_a_date_falls_back_to_the_backoff(headers, cap, seconds):
    assert retry_after(headers, cap) == seconds
