"""Printing: human text or --json on stdout, messages on stderr, progress only on a terminal.

Everything printed passes through redact(): no credential reaches a terminal or a log.
"""

from __future__ import annotations

import json
import os
import sys
from contextlib import contextmanager
from typing import Any, Iterator

from dr.model.redaction import redact
from dr.model.sizes import human_size  # noqa: F401  (re-exported for the commands)


class Output:
    def __init__(self, as_json: bool = False, quiet: bool = False):
        self.as_json = as_json
        self.quiet = quiet

    def say(self, text: str = "") -> None:
        """Human output (suppressed under --json; the JSON document carries the facts)."""
        if not self.as_json:
            print(redact(text), flush=True)

    def say_lines(self, lines: list[str]) -> None:
        """Many lines of human output in one write: a restore can list 50,000 items, and a
        flushed print per line cost seconds of its run."""
        if not self.as_json and lines:
            sys.stdout.write("".join(redact(line) + "\n" for line in lines))
            sys.stdout.flush()

    def note(self, text: str) -> None:
        """Messages for a person, on stderr, unless --quiet."""
        if not self.quiet:
            print(redact(text), file=sys.stderr, flush=True)

    def warn(self, text: str) -> None:
        """A warning on stderr, even under --quiet: cron runs quiet, and this must still be seen."""
        print(f"warning: {redact(text)}", file=sys.stderr, flush=True)

    def error(self, text: str) -> None:
        print(f"dr: {redact(text)}", file=sys.stderr, flush=True)

    def traceback(self, exc: BaseException) -> None:
        """The traceback of `exc` on stderr, even under --quiet (it is asked for, or a bug's)."""
        from traceback import format_exception  # (imports textwrap, linecache...: on errors only)

        print(redact("".join(format_exception(exc)).rstrip("\n")), file=sys.stderr, flush=True)

    def document(self, data: Any) -> None:
        if self.as_json:
            print(redact(json.dumps(data, indent=2, sort_keys=True, default=str)), flush=True)

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
    """A document (a report, a page) to the file --out names, atomically, or to stdout."""
    if path:
        write_atomically(path, text)
        out.note(f"{what} written to {path}")
    else:
        sys.stdout.write(text)
        sys.stdout.flush()
