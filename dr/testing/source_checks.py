"""The conformance checks that compare restores with the source, not only with each other.

Where it sits: mixed into dr.testing.exporter_conformance.ExporterConformance, whose machinery
(the shared first backup, `_backup`, `_artifacts`, `_restored`) these checks drive. They need
the fixture's optional members source_fingerprint() and change_source(); without them a check
raises NotChecked instead of passing. changed_source_is_read_again changes the source, so the
checks that back it up or compare with it refuse to run after it.
"""

from __future__ import annotations

from typing import Any

from dr.testing.exporter_fixtures import ConformanceFixture, NotChecked
from dr.testing.fingerprints import difference


def _require(condition: Any, message: str) -> None:
    if not condition:
        raise AssertionError(message)


class SourceChecks:
    """restore_equals_source and changed_source_is_read_again, over ExporterConformance's state."""

    def _unchanged_source(self) -> None:
        """The checks that back the source up, or compare with it, need it as first backed up."""
        _require(not self._source_changed, f"{self.name}: changed_source_is_read_again changed the source: "
                                           f"run it after every other check (as CHECKS orders them)")

    def _optional(self, member: str) -> None:
        """A fixture member that is optional (exporter_fixtures): a check without it does not run."""
        if getattr(type(self.fixture), member) is getattr(ConformanceFixture, member):
            raise NotChecked(f"{self.name}: not checked: the fixture has no {member} "
                             f"(docs/exporters.md, Writing a fixture)")

    def _holds_source(self, to: str, label: str) -> None:
        restored, source = self.fixture.fingerprint(to), self.fixture.source_fingerprint()
        _require(restored == source, f"{self.name}: {label} does not hold what the source holds "
                                     f"(fingerprint(to) != source_fingerprint()): {difference(source, restored)}")

    def check_restore_equals_source(self) -> None:
        """A restore into a new destination holds what the source holds: compared with it, not
        only with other restores (an exporter that restores altered or no content fails here)."""
        self._optional("source_fingerprint")
        self._unchanged_source()
        to = self.fixture.destination()
        _require(self.fixture.fingerprint(to) != self.fixture.source_fingerprint(),
                 f"{self.name}: the fixture's source_fingerprint() equals a new destination's fingerprint: "
                 f"it could not tell a restore that writes nothing")
        self._restored(to, "restore")
        self._holds_source(to, "a restore into a new destination")

    def check_changed_source_is_read_again(self) -> None:
        """After change_source(), the next backup exports the changed artifact again (a new
        change token, new content: not reused), and a restore of that backup holds the changed
        source. It changes the source, so it runs last."""
        self._optional("source_fingerprint")
        self._optional("change_source")
        before = {a.identity: a for a in self.artifacts}
        self._unchanged_source()
        unchanged = self.fixture.source_fingerprint()
        identity, self._source_changed = self.fixture.change_source(), True
        _require(self.fixture.source_fingerprint() != unchanged,
                 f"{self.name}: change_source() left source_fingerprint() as it was: no change to look for")
        second = self._backup(self.plan)
        after = {a.identity: a for a in self._artifacts(self.plan, second)}
        _require(identity in after, f"{self.name}: the backup after change_source() holds no artifact {identity!r}")
        old, new = before.get(identity), after[identity]
        if old is not None:
            token = old.meta.get("change_token")  # none: read at every backup, never reused
            frozen = bool(token) and new.meta.get("change_token") == token
            _require(not frozen and new.chunks != old.chunks,
                     f"{self.name}: after change_source() the next backup did not read {identity} again: "
                     + ("its change token did not change, so the old content was reused" if frozen
                        else "its change token changed but its content is the same"))
        to = self.fixture.destination()
        self._restored(to, "restore of the backup after change_source()", backup=second)
        self._holds_source(to, "a restore of the backup after change_source()")
