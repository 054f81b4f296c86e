"""What two fingerprints of the conformance suite differ in, in words a plugin author can act on.

Where it sits: used by dr.testing.exporter_conformance when a restore's fingerprint(to) is not
the fixture's source_fingerprint(). A fingerprint is any value compared with ==; when it is a
collection of entries, the message names the entries (by their first field, a path or an
identity, when every entry is a tuple keyed so), else it only says that they differ. Entries
may hold content, so each is shown redacted and cut short.
"""

from __future__ import annotations

from typing import Any, Hashable

from dr.model.redaction import redact

_SHOWN, _WIDTH = 4, 160


def difference(source: Any, restored: Any) -> str:
    """'only in the source: ...; only in the restore: ...' (and 'differ: ...' for keyed entries)."""
    a, b = _entries(source), _entries(restored)
    if a is None or b is None:
        return "they differ"
    keyed_a, keyed_b = _keyed(a), _keyed(b)
    if keyed_a is not None and keyed_b is not None:
        differ = {k for k in keyed_a.keys() & keyed_b.keys() if keyed_a[k] != keyed_b[k]}
        return (f"only in the source: {_shown(keyed_a.keys() - keyed_b.keys())}; only in the restore: "
                f"{_shown(keyed_b.keys() - keyed_a.keys())}; differ: {_shown(differ)}")
    return f"only in the source: {_shown(a - b)}; only in the restore: {_shown(b - a)}"


def _entries(value: Any) -> set | None:
    if isinstance(value, (str, bytes)):  # its characters are no entries
        return None
    try:
        return set(value)
    except TypeError:
        return None


def _keyed(entries: set) -> dict[Hashable, Any] | None:
    """The entries by their first field, when each is a tuple and no two share it."""
    if not all(isinstance(e, tuple) and len(e) > 1 for e in entries):
        return None
    keyed = {e[0]: e[1:] for e in entries}
    return keyed if len(keyed) == len(entries) else None


def _shown(items) -> str:
    items = sorted(redact(str(i))[:_WIDTH] for i in items)
    more = f" ... and {len(items) - _SHOWN} more" if len(items) > _SHOWN else ""
    return ", ".join(items[:_SHOWN]) + more if items else "nothing"
