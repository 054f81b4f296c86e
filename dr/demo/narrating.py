"""What the demo says to the person running it: the three calls it makes of the CLI's Output.

Where it sits: dr.demo is under the CLI and may not import it; `dr demo` passes its Output,
which has these methods, and the walkthrough and its parts speak only through them.
"""

from __future__ import annotations

from typing import Protocol


class Narrator(Protocol):
    def say(self, text: str = "") -> None:
        """A line of the walkthrough (stdout)."""

    def note(self, text: str) -> None:
        """A part left out, and how to include it."""

    def error(self, text: str) -> None:
        """What failed (stderr)."""
