"""SIGTERM stops dr the way Ctrl-C does, instead of killing it where it stands.

Kubernetes sends SIGTERM when a Job passes its activeDeadlineSeconds, when its node is drained
or its pod deleted, and waits terminationGracePeriodSeconds before SIGKILL. Python's default for
SIGTERM ends the process at once: no `finally`, no `with` exit, so a backup's repository lock
stayed behind. On another host (every pod is one) a lock counts as stale only after 30 minutes,
so the next scheduled backups found the repository locked and the RPO slipped. And as a
container's PID 1, which is how the image runs dr, a process without a handler does not receive
SIGTERM at all: the kernel drops it, and the pod sat out the grace period until SIGKILL.

With the handler, SIGTERM raises `Terminated` in the main thread (where Python runs signal
handlers): every `with` and `finally` on the way out runs, as for KeyboardInterrupt, which it
subclasses so that every place that already cleans up after Ctrl-C does the same here.
"""

from __future__ import annotations

import signal
import threading
from contextlib import contextmanager
from typing import Iterator


class Terminated(KeyboardInterrupt):
    """SIGTERM arrived: unwind and exit (dr.cli.exitcodes.Exit.TERMINATED)."""


def _raise(signum, frame) -> None:
    raise Terminated()


@contextmanager
def sigterm_unwinds() -> Iterator[None]:
    """While inside, SIGTERM raises Terminated; the previous handler comes back after. Only the
    main thread may set a handler: elsewhere (dr called from a thread) this changes nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _raise)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
