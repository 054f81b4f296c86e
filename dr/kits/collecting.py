"""Fewer garbage collections in a dr process.

CPython's collector runs a young collection every 700 net allocations of container objects,
and every tenth of those a middle one, every tenth of those (when the old generation grew by a
quarter) a full one over every object alive. A backup or restore makes and drops millions of
short-lived dicts and lists (listed pages, objects, outcomes) while it keeps a growing set
alive (the catalog, the reference and readiness state): at 10,000 Kubernetes objects the
collector ran 486 + 44 + 4 times for 0.45 s of a 2.2 s backup (gc.callbacks), 0.30 s of it in
the four full collections. Almost none of that garbage is cyclic (reference counting frees
it), so dr collects far less often: the young generation may hold 100,000 objects, and the
older ones are collected after 50 and 100 of the younger. The same backup then ran one young
collection (0.04 s). What cyclic garbage there is waits longer, a few MB at most.

The previous thresholds come back when the command ends, for a process that runs dr.cli.main
more than once (the tests). gc.freeze() is not used: it would keep for good whatever garbage
exists when it is called.
"""

from __future__ import annotations

import contextlib
import gc
from typing import Iterator

THRESHOLDS = (100_000, 50, 100)


@contextlib.contextmanager
def collecting_less() -> Iterator[None]:
    """Around one dr command (dr.cli.main), or a benchmark's run of dr's code as the command runs it."""
    before = gc.get_threshold()
    gc.set_threshold(*THRESHOLDS)
    try:
        yield
    finally:
        gc.set_threshold(*before)
