"""Printing: human text or --json on stdout, messages on stderr, progress only on a terminal.

Everything printed passes through redact(): no credential reaches a terminal or a log.

A reader that goes away (`dr snapshots | head -3`, a log shipper that died) is not dr's
failure: the rest of that stream's output goes to /dev/null and the command finishes its work
and exits with its own status. Stopping there instead would leave a restore or a backup half
done for the sake of lines nobody reads.
"""

from __future__ import annotations

import json
import os
import sys
from contextlib import contextmanager
from typing import Any, Iterator

from dr.model.redaction import redact
from dr.model.sizes import human_size  # noqa: F401  (re-exported for the commands)


# The version of every --json document's shape (docs/json.md): keys are only ever added within
# a version; one that a consumer would have to change for raises it.
SCHEMA_VERSION = 1


def error_document(message: str, code: int, kind: str | None = None, **more: Any) -> dict[str, Any]:
    """What --json prints for a failure: `kind` is the exit code's name in lower case (usage,
    failure, locked, integrity, ...), or a finer one (plan, bug)."""
    from dr.cli.exitcodes import Exit

    return {"error": {"message": message, "exit_code": int(code),
                      "kind": kind or Exit(code).name.lower(), **more}}


class Output:
    def __init__(self, as_json: bool = False, quiet: bool = False):
        self.as_json = as_json
        self.quiet = quiet

    def say(self, text: str = "") -> None:
        """Human output (suppressed under --json; the JSON document carries the facts)."""
        if not self.as_json:
            emit(sys.stdout, redact(text) + "\n")

    def say_lines(self, lines: list[str]) -> None:
        """Many lines of human output in one write: a restore can list 50,000 items, and a
        flushed print per line cost seconds of its run."""
        if not self.as_json and lines:
            emit(sys.stdout, "".join(redact(line) + "\n" for line in lines))

    def note(self, text: str) -> None:
        """Messages for a person, on stderr, unless --quiet."""
        if not self.quiet:
            emit(sys.stderr, redact(text) + "\n")

    def warn(self, text: str) -> None:
        """A warning on stderr, even under --quiet: cron runs quiet, and this must still be seen."""
        emit(sys.stderr, f"warning: {redact(text)}\n")

    def error(self, text: str) -> None:
        emit(sys.stderr, f"dr: {redact(text)}\n")

    def failure(self, message: str, code: int, kind: str | None = None) -> int:
        """A failed command: its one line on stderr and, under --json, the error document on
        stdout (docs/json.md). Returns the exit code. `kind` defaults to the code's name."""
        self.error(message)
        self.document(error_document(message, code, kind))
        return code

    def traceback(self, exc: BaseException) -> None:
        """The traceback of `exc` on stderr, even under --quiet (it is asked for, or a bug's)."""
        from traceback import format_exception  # (imports textwrap, linecache...: on errors only)

        emit(sys.stderr, redact("".join(format_exception(exc)).rstrip("\n")) + "\n")

    def document(self, data: dict[str, Any]) -> None:
        """The command's JSON document on stdout (--json only), with its schema_version."""
        if self.as_json:
            data = {"schema_version": SCHEMA_VERSION, **data}
            for piece in _json_pieces(data):
                emit(sys.stdout, piece)

    @contextmanager
    def progress(self, description: str, total: int | None = None, unit: str = "B") -> Iterator:
        """A tqdm bar on a terminal; a no-op under cron, --json or --quiet."""
        if self.as_json or self.quiet or not sys.stderr.isatty():
            yield lambda n: None
            return
        from tqdm import tqdm

        with tqdm(total=total, desc=description, unit=unit, unit_scale=True, file=sys.stderr,
                  leave=False, dynamic_ncols=True) as bar:
            yield bar.update


def write_atomically(path: str, text: str) -> None:
    """Write via a temporary name and a rename: a reader never sees half a report."""
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    temporary = f"{path}.tmp-{os.getpid()}"
    with open(temporary, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.replace(temporary, path)


def deliver(out: Output, text: str, path: str | None, what: str) -> None:
    """A document (a report, a page) to the file --out names, atomically, or to stdout. Under
    --json, stdout still carries one document: with --out, where the report went."""
    if path:
        write_atomically(path, text)
        out.note(f"{what} written to {path}")
        out.document({"written": path, "document": what})
    else:
        emit(sys.stdout, text)


JSON_PIECE = 1 << 16  # characters of a document encoded, redacted and written at a time


def _json_pieces(data: dict[str, Any]) -> Iterator[str]:
    """The document as indented JSON, redacted, in pieces of whole lines: a restore's document
    lists every item (100,000 files), which as one string, then its redacted copy, held twice
    as much as everything else the command kept. Redacting line by line finds what the whole
    text would: a JSON string, where every secret sits, never spans lines."""
    held: list[str] = []
    size = 0
    for chunk in json.JSONEncoder(indent=2, sort_keys=True, default=str).iterencode(data):
        held.append(chunk)
        size += len(chunk)
        if size >= JSON_PIECE and "\n" in chunk:
            text = "".join(held)
            cut = text.rindex("\n") + 1
            yield redact(text[:cut])
            held, size = [text[cut:]], len(text) - cut
    yield redact("".join(held)) + "\n"


def emit(stream, text: str) -> None:
    """Write and flush; when the reader is gone, the rest goes to /dev/null (module docstring)."""
    try:
        stream.write(text)
        stream.flush()
    except BrokenPipeError:
        _discard(stream)


def _discard(stream) -> None:
    """Point the stream's descriptor at /dev/null, so what is still buffered and every later
    write succeed without reaching anyone."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, stream.fileno())
    finally:
        os.close(devnull)
