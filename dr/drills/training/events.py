"""Reading the progress protocol (docs/readiness.md, "Training recovery drills"): JSON lines, one
event each, appended by the training process (dr.training.progress).

Reading is bounded, because the file is the trainer's: a line over 64 KiB, a line that is not a
JSON object with a known `event`, or a step without an integer `step` is counted as malformed and
skipped, never trusted; at most 1,000,000 events are kept. The last line may be half-written
(a killed trainer): it is read only once it ends with a newline.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field

MAX_LINE = 64 << 10
MAX_EVENTS = 1_000_000
EVENTS = frozenset({"started", "loaded", "group_ready", "step", "saved"})


@dataclass
class ProgressLog:
    path: str
    events: list[dict] = field(default_factory=list)
    malformed: int = 0

    def of(self, event: str) -> list[dict]:
        return [e for e in self.events if e["event"] == event]

    def first(self, event: str) -> dict | None:
        return next((e for e in self.events if e["event"] == event), None)

    def steps(self) -> dict[int, dict]:
        """Step number -> its event (a step logged twice, as by a restarted process: the last)."""
        return {e["step"]: e for e in self.of("step")}


class Tail:
    """Reads a progress file as it grows; events(): the complete lines added since last time."""

    def __init__(self, path: str) -> None:
        self.log = ProgressLog(path)
        self._offset = 0
        self._pending = b""

    def poll(self) -> list[dict]:
        """The events of the lines completed since the last poll (reads to the file's end)."""
        new: list[dict] = []
        try:
            with open(self.log.path, "rb") as handle:
                handle.seek(self._offset)
                while data := handle.read(1 << 20):
                    self._offset += len(data)
                    new.extend(self._lines(data))
        except FileNotFoundError:
            return []
        room = MAX_EVENTS - len(self.log.events)
        self.log.events.extend(new[:max(room, 0)])
        return new

    def _lines(self, data: bytes) -> list[dict]:
        lines = (self._pending + data).split(b"\n")
        self._pending = lines.pop()
        if len(self._pending) > MAX_LINE:  # a line that never ends: drop what came so far
            self._pending, self.log.malformed = b"", self.log.malformed + 1
        return [e for e in (self._parse(line) for line in lines if line.strip()) if e is not None]

    def _parse(self, line: bytes) -> dict | None:
        event = _event(line)
        if event is None:
            self.log.malformed += 1
        return event


def read_log(path: str) -> ProgressLog:
    """A whole progress file (the failed run's); a missing file is an error naming it."""
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{path}: no such progress log")
    tail = Tail(path)
    tail.poll()
    return tail.log


def _event(line: bytes) -> dict | None:
    if len(line) > MAX_LINE:
        return None
    try:
        event = json.loads(line)
    except ValueError:
        return None
    if not isinstance(event, dict) or event.get("event") not in EVENTS:
        return None
    if not isinstance(event.get("t"), (int, float)):
        return None
    if event["event"] in ("step", "loaded", "saved") and (type(event.get("step")) is not int):
        return None
    return event
