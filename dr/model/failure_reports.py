"""Failures as an operator reads them: one line each, with the reason and the object.

Where it sits: the backup (and any other flow that carries on past a failed item) reports a
failure through here. An expected condition (a store that is throttled or unreachable, a source
that cannot be read, a forged catalog) is one line and never a traceback. An exception of a kind
that only a bug raises (TypeError, KeyError, ...) also gets one line, saying it is unexpected;
its traceback is printed only when debugging is on: DR_DEBUG=1 in the environment, which is
what the CLI's --debug sets, so the library and the command line agree.
"""

from __future__ import annotations

import os
import traceback

DEBUG_ENV = "DR_DEBUG"

# Exception kinds that mean a programming error, not a condition of the world dr runs in.
BUG_KINDS = (TypeError, AttributeError, NameError, AssertionError, LookupError, ArithmeticError,
             RecursionError, NotImplementedError, SystemError)


def debugging() -> bool:
    return os.environ.get(DEBUG_ENV, "").strip().lower() not in ("", "0", "false", "no")


def is_unexpected(exc: BaseException) -> bool:
    return isinstance(exc, BUG_KINDS)


def reason(exc: BaseException) -> str:
    """`Kind: message`, on one line."""
    message = " ".join(str(exc).split())
    return f"{exc.__class__.__name__}: {message}" if message else exc.__class__.__name__


def failure_line(what: str, exc: BaseException) -> str:
    """One line for a failed item; for a bug, plus its traceback when debugging is on."""
    if not is_unexpected(exc):
        return f"{what}: failed: {reason(exc)}"
    line = f"{what}: failed with an unexpected error (a bug, please report it): {reason(exc)}"
    if debugging():
        trace = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
        return f"{line}\n{trace.rstrip()}"
    return f"{line} (set {DEBUG_ENV}=1 or pass --debug for its traceback)"
