"""dr's one retry policy, and the one base of every error worth retrying (issue 32, item 1).

An error says whether retrying may help by its type (kopf's temporary/permanent errors): a
subclass of `Transient` may be retried, anything else is permanent. Each layer keeps its own
names for what failed (TransientStoreError for a repository store, TransientPlaceError for a
checkpoint place, TemporaryError for a registry, TemporaryFailure for a Kubernetes API call),
all of them Transient, so one policy retries them all the same way:

  - only the `retry_on` errors (Transient by default), at most `attempts` calls, the last error
    raised as it is (no RetryError wrapping: callers see what failed);
  - between calls, what the server asked for (`retry_after`, seconds, from a Retry-After header:
    a throttled server says when to come back), else exponential backoff with full jitter
    (AWS's "exponential backoff and jitter": many workers throttled together do not come back
    together), `base_delay * 2**n` drawn uniformly from [0, that], capped at `max_delay`;
  - `sleep` injectable, so tests do not wait; `before_sleep` to log each retry.

tenacity does the looping. MLflow's HTTP adapter (urllib3 Retry) and boto3's clients (the SDK's
standard mode) retry inside the library that sends the request; they are configured there and
not wrapped again.
"""

from __future__ import annotations

import time
from typing import Callable

from tenacity import RetryCallState, Retrying, retry_if_exception_type, stop_after_attempt, wait_random_exponential


class Transient(Exception):
    """Retrying the same call may succeed (throttled, a server error, a dropped connection).
    retry_after: the seconds the server asked to wait, when it said."""

    retry_after: float | None = None


def retry_after(headers, cap: float = 60.0) -> float | None:
    """The seconds a Retry-After header asks for (at most `cap`); None when there is none, or
    when it is an HTTP date (the backoff applies then)."""
    value = (headers or {}).get("Retry-After")
    try:
        return min(float(value), cap) if value not in (None, "") else None
    except ValueError:
        return None


class _AskedOrBackoff:
    """The wait: what the failed call's error asks (retry_after), else jittered backoff."""

    def __init__(self, base_delay: float, max_delay: float):
        self.backoff = wait_random_exponential(multiplier=base_delay, max=max_delay)

    def __call__(self, state: RetryCallState) -> float:
        error = state.outcome.exception() if state.outcome else None
        asked = getattr(error, "retry_after", None)
        return asked if asked is not None else self.backoff(state)


def policy(attempts: int, base_delay: float, max_delay: float, *,
           retry_on: type[BaseException] | tuple[type[BaseException], ...] = Transient,
           sleep: Callable[[float], None] = time.sleep,
           before_sleep: Callable[[RetryCallState], None] | None = None) -> Retrying:
    """The retry loop (a tenacity Retrying: call it with a function, or iterate its attempts)."""
    if attempts < 1:
        raise ValueError("attempts must be at least 1")
    return Retrying(stop=stop_after_attempt(attempts), wait=_AskedOrBackoff(base_delay, max_delay),
                    retry=retry_if_exception_type(retry_on), sleep=sleep, reraise=True,
                    **({"before_sleep": before_sleep} if before_sleep else {}))


class ResumingReads:
    """readinto() for a stream that may break: the broken stream is dropped, a new one opened
    where the last read ended (`_open_stream`, which knows `_offset`), and the failed read
    repeated, under the owner's retry policy. Shared by store streams and place readers,
    each naming its own transient error."""

    _stream = None
    _offset = 0
    _transient: type[BaseException] = Transient  # the owner's own transient error

    def _retrying(self) -> Retrying:
        raise NotImplementedError

    def _open_stream(self):
        raise NotImplementedError

    def readinto(self, buffer) -> int:
        for attempt in self._retrying():
            with attempt:
                if self._stream is None:
                    self._stream = self._open_stream()
                try:
                    got = self._stream.readinto(buffer)
                except self._transient:
                    self._drop()
                    raise
        self._offset += got
        return got

    def _drop(self) -> None:
        stream, self._stream = self._stream, None
        try:
            stream.close()
        except Exception:  # a broken stream may fail to close too; the read error is what counts
            pass

    def _close_stream(self) -> None:
        if self._stream is not None:
            stream, self._stream = self._stream, None
            stream.close()
