"""The place conformance suite: checks every place must pass, clause by clause of contract.py.

Importable, so that whoever writes a new kind of place runs exactly what dr's own places run
(kopia's blobtesting.VerifyStorage is the model). Plain functions that raise AssertionError;
no test framework needed:

    from dr.kits.places.conformance import check_place
    check_place(MyPlace(...))                     # an empty place, writable
    check_place(MyPlace(...), faults=MyFaults())  # and the transient/permanent split

`faults` (optional) lets the suite make the place's storage fail the way networks do, to
check that those failures are TransientPlaceError and that RetryingPlace gets through them.
It has `failing_request(kind)`: a context manager during which the place's next storage
request fails once, kind "unavailable" (a 503) or "reset" (the connection reset); and
optionally `broken_stream()`: the next streamed body breaks once after its first bytes.
dr's own tests (tests/conformance/test_place_contract.py) run it over a directory and over
S3 on two servers.
"""

from __future__ import annotations

import base64
import hashlib
import os
from concurrent.futures import ThreadPoolExecutor
from typing import Callable

from dr.kits.places.contract import (PermanentPlaceError, Place, PlaceMissing, SourceChanged,
                                                        TransientPlaceError)
from dr.kits.places.retrying import RetryingPlace

PART = 5 << 20  # S3's smallest part but the last


def check_place(place: Place, faults=None, part_size: int = PART) -> list[str]:
    """Run every check on an empty, writable place; the names of the checks run."""
    checks: list[tuple[str, Callable[[], None]]] = [
        (check.__name__, lambda check=check: check(place))
        for check in (check_invalid_paths, check_put_and_read_back, check_create_only, check_absent_files,
                      check_listing, check_ranged_and_streamed_reads, check_changed_source, check_delete_many)
    ]
    checks += [("check_writer", lambda: check_writer(place, part_size)),
               ("check_resumable_writer", lambda: check_resumable_writer(place, part_size))]
    if faults is not None:
        checks.append(("check_error_split", lambda: check_error_split(place, faults)))
    for _, run in checks:
        run()
    return [name for name, _ in checks]


def check_invalid_paths(place: Place) -> None:
    for bad in ("../escape", "/absolute", "a//b", "a/./b", "a/../b"):
        try:
            place.get(bad)
        except ValueError:
            continue
        raise AssertionError(f"{place!r}: path {bad!r} was accepted")


def check_put_and_read_back(place: Place) -> None:
    data = os.urandom(1000)
    assert place.put("rw/one.bin", data, sha256_b64=_b64sha(data)) is True
    assert place.get("rw/one.bin") == data, "read-after-write: get"
    head = place.head("rw/one.bin")
    assert head is not None and head[0] == len(data), f"read-after-write: head {head}"
    assert [f.path for f in place.list_files("rw")] == ["rw/one.bin"], "read-after-write: list_files"
    assert place.read("rw/one.bin", 0, len(data)) == data, "read-after-write: read"
    assert place.put("rw/one.bin", b"replaced") is True
    assert place.get("rw/one.bin") == b"replaced", "put replaces unless create_only"
    assert place.head("rw/one.bin")[1] != head[1], "version changes when the file is replaced"


def check_create_only(place: Place) -> None:
    assert place.put("once/f", b"first", create_only=True) is True
    assert place.put("once/f", b"second", create_only=True) is False, "create_only on a taken path"
    assert place.get("once/f") == b"first", "a refused create_only put changed the file"
    with ThreadPoolExecutor(8) as pool:
        won = list(pool.map(lambda i: place.put("once/race", b"%d" % i, create_only=True), range(8)))
    assert won.count(True) == 1, f"racing create_only puts: {won.count(True)} won"
    assert place.get("once/race") == b"%d" % won.index(True)


def check_absent_files(place: Place) -> None:
    """A missing file is an answer (None, '') or PlaceMissing: permanent, a FileNotFoundError."""
    assert place.get("absent/f") is None and place.head("absent/f") is None
    assert place.version("absent/f") == ""
    assert list(place.list_files("absent")) == [], "a missing prefix lists nothing"
    for what, call in (("read", lambda: place.read("absent/f", 0, 10)),
                       ("open_read", lambda: _read_all(place, "absent/f"))):
        try:
            call()
        except PlaceMissing as exc:
            assert isinstance(exc, PermanentPlaceError) and isinstance(exc, FileNotFoundError)
            continue
        raise AssertionError(f"{what} of a missing file did not raise PlaceMissing")
    place.delete("absent/f")
    place.delete_many(["absent/f", "absent/g"])


def check_listing(place: Place) -> None:
    """Every file once, all of them (past S3's 1,000-key page), relative to the root, in its
    directory only; partial files never."""
    names = {f"ls/d{i % 3}/f{i:04}": b"x" * (i % 7) for i in range(1005)}
    names["lsx/not-under-ls"] = b"no"
    with ThreadPoolExecutor(16) as pool:
        list(pool.map(lambda kv: place.put(*kv), names.items()))
    listed = [(f.path, f.size) for f in place.list_files("ls")]
    assert len(listed) == len(set(listed)), "a file was listed twice"
    want = {(k, len(v)) for k, v in names.items() if k.startswith("ls/")}
    assert set(listed) == want, f"listing differs: {len(listed)} listed, {len(want)} stored"
    assert {f.path for f in place.list_files("ls/d1")} == {k for k in names if k.startswith("ls/d1/")}
    place.delete_many(list(names))
    assert list(place.list_files("ls")) == []


def check_ranged_and_streamed_reads(place: Place) -> None:
    data = os.urandom(3 << 20)
    place.put("reads/f", data)
    assert place.read("reads/f", 10, 100) == data[10:110]
    assert place.read("reads/f", len(data) - 5, 100) == data[-5:], "fewer bytes only at the end"
    assert place.read("reads/f", len(data), 100) == b"", "at the end: nothing"
    assert _read_all(place, "reads/f") == data
    assert _read_all(place, "reads/f", offset=1 << 20) == data[1 << 20:], "open_read from an offset"
    reader = place.open_read("reads/f")
    try:
        view = memoryview(bytearray(len(data) + 10))
        assert reader.readinto(view) == len(data), "readinto fills the view but at the end"
    finally:
        reader.close()


def check_changed_source(place: Place) -> None:
    """A file replaced after the listing that judged it is refused, not mixed in."""
    place.put("changed/f", b"old bytes")
    (listed,) = list(place.list_files("changed"))
    place.put("changed/f", b"new and longer bytes")
    try:
        _read_all(place, "changed/f", expect=listed)
    except SourceChanged as exc:
        assert isinstance(exc, PermanentPlaceError)
        return
    raise AssertionError("a file changed since its listing was read without SourceChanged")


def check_delete_many(place: Place) -> None:
    for name in ("a", "b", "c"):
        place.put(f"del/{name}", b"x")
    place.delete_many(["del/a", "del/c", "del/absent"])
    assert [f.path for f in place.list_files("del")] == ["del/b"]
    place.delete("del/b")
    assert place.get("del/b") is None


def check_writer(place: Place, part_size: int) -> None:
    """Parts in any order from several threads; nothing visible before complete()."""
    data = os.urandom(2 * part_size + 1000)
    parts = [(n, memoryview(data)[(n - 1) * part_size:n * part_size]) for n in (3, 1, 2)]
    writer = place.writer("w/big", len(data), part_size)
    with ThreadPoolExecutor(3) as pool:
        list(pool.map(lambda p: writer.write(p[0], p[1], _crc(p[1])), parts))
    assert place.get("w/big") is None and list(place.list_files("w")) == [], "visible before complete()"
    writer.complete(_b64sha(data))
    assert place.get("w/big") == data
    aborted = place.writer("w/aborted", len(data), part_size)
    aborted.write(1, memoryview(data)[:part_size], _crc(memoryview(data)[:part_size]))
    aborted.abort()
    assert place.get("w/aborted") is None and not place.pending_uploads("w/")


def check_resumable_writer(place: Place, part_size: int) -> None:
    """A writer kept for resume is a pending upload; a later writer reuses its matching parts."""
    data = os.urandom(part_size + 100)
    first = memoryview(data)[:part_size]
    writer = place.writer("resume/f", len(data), part_size)
    writer.write(1, first, _crc(first))
    writer.abort(keep_for_resume=True)
    uploads = [u for u in place.pending_uploads("resume/") if u.path == "resume/f"]
    assert len(uploads) == 1, f"pending uploads: {uploads}"
    again = place.writer("resume/f", len(data), part_size)
    stored = again.resumable_parts()
    assert 1 in stored and again.matches(stored[1], first, _crc(first)), "the written part is offered"
    again.keep(1, stored[1], _crc(first))
    rest = memoryview(data)[part_size:]
    again.write(2, rest, _crc(rest))
    again.complete(_b64sha(data))
    assert place.get("resume/f") == data
    for upload in place.pending_uploads("resume/"):
        place.abort(upload)
    assert place.pending_uploads("resume/") == []
    place.abort(uploads[0])  # gone already: not an error


def check_error_split(place: Place, faults) -> None:
    """Transient failures are TransientPlaceError and RetryingPlace gets through them; a
    missing file is permanent and never retried."""
    data = os.urandom(2 << 20)
    place.put("faults/f", data)
    waits: list[float] = []
    retrying = RetryingPlace(place, sleep=waits.append)
    for kind in ("unavailable", "reset"):
        with faults.failing_request(kind):
            try:
                place.get("faults/f")
            except TransientPlaceError:
                pass
            else:
                raise AssertionError(f"a failed request ({kind}) was not a TransientPlaceError")
        with faults.failing_request(kind):
            assert retrying.get("faults/f") == data, f"RetryingPlace did not get through {kind}"
    assert waits, "RetryingPlace retried without waiting"
    broken_stream = getattr(faults, "broken_stream", None)
    if broken_stream is not None:
        with broken_stream():
            try:
                _read_all(place, "faults/f")
            except TransientPlaceError:
                pass
            else:
                raise AssertionError("a stream broken mid-body was not a TransientPlaceError")
        with broken_stream():
            assert _read_all(retrying, "faults/f") == data, "RetryingPlace did not resume the stream"
    waits.clear()
    try:
        retrying.read("faults/absent", 0, 1)
    except PlaceMissing:
        assert not waits, "a missing file was retried"
    else:
        raise AssertionError("read of a missing file did not raise PlaceMissing")


def _read_all(place: Place, path: str, expect=None, offset: int = 0) -> bytes:
    out, buf = bytearray(), memoryview(bytearray(1 << 20))
    reader = place.open_read(path, expect, offset)
    try:
        while n := reader.readinto(buf):
            out += buf[:n]
    finally:
        reader.close()
    return bytes(out)


def _b64sha(data: bytes) -> str:
    return base64.b64encode(hashlib.sha256(data).digest()).decode()


def _crc(data) -> str:
    from dr.kits.places.s3 import crc32_b64

    return crc32_b64(data)
