"""The conformance suite fails exporters that break the contract: each flaw fails its check.

A small exporter of note files, with switches that each break one clause. Without flaws it
passes every check (verify_exporter); with one, the check for that clause fails (others may
fail too: an outcome without a reason breaks every restoring check).
"""

from __future__ import annotations

import os
import re
from typing import Any, Hashable, Iterator

import pytest

from dr.contract import (ArtifactSink, ContentReader, Discovered, Exporter, ExporterOptions, Outcome, OutcomeStatus,
                         RestoreRequest)
from dr.model.artifacts import Artifact, Dependency
from dr.testing import CHECKS, ConformanceFixture, ConformanceWarning, ExporterConformance, NotChecked, verify_exporter
from dr.testing.fingerprints import difference
from tests.conformance.builtin_fixtures import tree_fingerprint


class NotesExporter(Exporter):
    type_name = "notes"
    summary = "note files in one folder (a test exporter with switchable flaws)"
    contract_version = 1

    class Options(ExporterOptions):
        folder: str
        flaws: list[str] = []

    def _names(self) -> list[str]:
        return sorted(os.listdir(self.options.folder))

    def discover(self) -> Iterator[Discovered]:
        names = self._names()
        yield from (Discovered("note", n) for n in (names[1:] if "discover-misses" in self.options.flaws else names))

    def export(self, sink: ArtifactSink) -> None:
        if not os.path.isdir(self.options.folder):
            if "hides-failure" in self.options.flaws:
                return
            raise FileNotFoundError(f"no folder {self.options.folder}")
        host = "https://writer:hunter2@notes.example" if "leaks" in self.options.flaws else "https://notes.example"
        for name in self._names():
            st = os.stat(os.path.join(self.options.folder, name))
            token = {"no-token": "", "frozen-token": "always the same"}.get(
                next((f for f in self.options.flaws if f.endswith("-token")), ""),
                f"{st.st_size}:{st.st_mtime_ns}:{st.st_ino}")
            sink.write("note", name, lambda name=name: open(os.path.join(self.options.folder, name), "rb"),
                       dependencies=[Dependency("notes-host", host)], meta={"provides": [f"note:{name}"]},
                       change_token=token)

    def restore(self, artifacts: list[Artifact], reader: ContentReader,
                request: RestoreRequest) -> Iterator[Outcome]:
        flaws = self.options.flaws
        for artifact in artifacts:
            data, target = reader.read(artifact), os.path.join(request.to, artifact.identity)
            data = data.upper() if "garbles-restore" in flaws else data  # and compares what it writes
            exists = os.path.exists(target)
            if exists and open(target, "rb").read() == data and "always-restores" not in flaws:
                yield Outcome(artifact.identity, OutcomeStatus.UNCHANGED, "already identical")
            elif request.dry_run and "dry-run-writes" not in flaws:
                yield Outcome(artifact.identity, OutcomeStatus.PLANNED, f"would write {target}")
            elif exists and not request.overwrite and "ignores-overwrite" not in flaws:
                yield Outcome(artifact.identity, OutcomeStatus.CONFLICT, f"{target} differs")
            else:
                os.makedirs(request.to, exist_ok=True)
                with open(target, "wb") as out:
                    out.write(data)
                yield Outcome(artifact.identity, OutcomeStatus.RESTORED, "" if "no-reason" in flaws else "written")


class NotesFixture(ConformanceFixture):
    exporter = NotesExporter

    def __init__(self, *flaws: str):
        self.flaws, self.made = list(flaws), 0

    def build_source(self, workdir: str) -> None:
        self.workdir = workdir
        os.makedirs(os.path.join(workdir, "notes"))
        for name, text in [("a.md", "alpha"), ("b.md", "beta"), ("c.md", "gamma")]:
            with open(os.path.join(workdir, "notes", name), "w") as handle:
                handle.write(text)

    def source_options(self) -> dict[str, Any]:
        return {"folder": os.path.join(self.workdir, "notes"), "flaws": self.flaws}

    def broken_options(self) -> dict[str, Any]:
        return {"folder": os.path.join(self.workdir, "missing"), "flaws": self.flaws}

    def destination(self) -> str:
        self.made += 1
        return os.path.join(self.workdir, f"restored-{self.made}")

    def fingerprint(self, to: str) -> Hashable:
        return tree_fingerprint(to, times=False)

    def perturb(self, to: str) -> str:
        with open(os.path.join(to, "b.md"), "w") as handle:
            handle.write("changed")
        return "b.md"

    def source_fingerprint(self) -> Hashable:
        return tree_fingerprint(os.path.join(self.workdir, "notes"), times=False)

    def change_source(self) -> str:
        with open(os.path.join(self.workdir, "notes", "c.md"), "a") as handle:
            handle.write(", changed at the source")
        return "c.md"


class UnfingerprintedNotesFixture(NotesFixture):
    """A fixture written before the suite compared restores with the source."""

    source_fingerprint = ConformanceFixture.source_fingerprint
    change_source = ConformanceFixture.change_source


def test_a_conforming_exporter_passes_every_check(tmp_path):
    verify_exporter(NotesFixture(), str(tmp_path))


FLAWS = {
    "discover-misses": ("discover_agrees_with_export", "export() wrote what discover() does not name: note a.md"),
    "no-token": ("second_export_reuses_everything", "reused 0 of 3 artifacts"),
    "leaks": ("dependencies_and_provides_are_well_formed", "holds credentials (https://***@notes.example)"),
    "no-reason": ("every_item_has_an_outcome_and_a_reason", "has no reason"),
    "dry-run-writes": ("dry_run_changes_nothing", "a dry-run restore changed the destination"),
    "always-restores": ("second_restore_is_unchanged", "expected every item unchanged"),
    "ignores-overwrite": ("conflict_until_overwrite", "b.md differs, expected conflict"),
    "hides-failure": ("failing_source_does_not_hide_others", "the broken source is not reported with a reason"),
    "garbles-restore": ("restore_equals_source", "does not hold what the source holds"),
    "frozen-token": ("changed_source_is_read_again", "its change token did not change"),
}


@pytest.mark.parametrize("flaw", sorted(FLAWS))
def test_each_flaw_fails_its_check(flaw, tmp_path):
    check, message = FLAWS[flaw]
    suite = ExporterConformance(NotesFixture(flaw), str(tmp_path))
    with pytest.raises(AssertionError) as info:
        getattr(suite, f"check_{check}")()
    assert message in str(info.value) and "hunter2" not in str(info.value)


def test_verify_exporter_names_every_failed_check(tmp_path):
    with pytest.raises(AssertionError) as info:
        verify_exporter(NotesFixture("no-token", "leaks"), str(tmp_path))
    text = str(info.value)
    assert text.startswith(f"2 of {len(CHECKS)} conformance checks failed")
    assert "second_export_reuses_everything: notes:" in text
    assert "dependencies_and_provides_are_well_formed: notes:" in text


def test_garbled_restore_names_what_differs(tmp_path):
    suite = ExporterConformance(NotesFixture("garbles-restore"), str(tmp_path))
    with pytest.raises(AssertionError) as info:
        suite.check_restore_equals_source()
    assert "only in the source: nothing; only in the restore: nothing; differ: a.md, b.md, c.md" in str(info.value)


def test_a_difference_names_the_entries_by_their_first_field():
    source = (("a.md", "1"), ("b.md", "2"), ("c.md", "3"))
    assert difference(source, (("a.md", "1"), ("c.md", "9"), ("d.md", "4"))) == \
        "only in the source: b.md; only in the restore: d.md; differ: c.md"
    assert difference({"x", "https://u:pw@host"}, {"x"}) == \
        "only in the source: https://***@host; only in the restore: nothing"
    assert difference('{"json": 1}', '{"json": 2}') == "they differ"


def test_a_fixture_without_the_source_members_is_not_checked_rather_than_passed(tmp_path):
    suite = ExporterConformance(UnfingerprintedNotesFixture(), str(tmp_path / "one"))
    for check, member in [("restore_equals_source", "source_fingerprint"),
                          ("changed_source_is_read_again", "source_fingerprint")]:
        with pytest.raises(NotChecked, match=f"notes: not checked: the fixture has no {member}"):
            getattr(suite, f"check_{check}")()
    with pytest.warns(ConformanceWarning, match="2 of .* conformance checks did not run"):
        unchecked = verify_exporter(UnfingerprintedNotesFixture(), str(tmp_path / "two"))
    assert [line.split(":")[0] for line in unchecked] == ["restore_equals_source", "changed_source_is_read_again"]


class BlindNotesFixture(NotesFixture):
    """source_fingerprint() that sees nothing, change_source() that changes nothing it sees."""

    def source_fingerprint(self) -> Hashable:
        return None

    def change_source(self) -> str:
        return "c.md"


@pytest.mark.parametrize("check, message", [
    ("restore_equals_source", "could not tell a restore that writes nothing"),
    ("changed_source_is_read_again", "change_source() left source_fingerprint() as it was")])
def test_a_fixture_that_could_not_fail_the_checks_is_refused(check, message, tmp_path):
    suite = ExporterConformance(BlindNotesFixture(), str(tmp_path))
    with pytest.raises(AssertionError, match=re.escape(message)):
        getattr(suite, f"check_{check}")()


def test_checks_that_need_the_source_as_backed_up_refuse_after_it_changed(tmp_path):
    suite = ExporterConformance(NotesFixture(), str(tmp_path))
    suite.check_changed_source_is_read_again()
    with pytest.raises(AssertionError, match="run it after every other check"):
        suite.check_second_export_reuses_everything()


def test_the_suite_names_malformed_finding_codes_and_kind_mappings():
    """declarations_are_well_formed over a class whose codes a report could not use."""
    from types import MappingProxyType

    from dr.contract import FindingCode
    from dr.testing.declarations import declaration_problems

    class BadCodes(NotesExporter):
        finding_codes = (FindingCode("Notes Lost", "t", "a"), FindingCode("image-in-failed-domain", "t", "a"),
                         FindingCode("notes-archive-lost", "", "a"))
        lost_kind_codes = MappingProxyType({"notes-archive": "notes-archive-lost", "notes-index": "nobody-declares"})

    problems = "\n".join(declaration_problems(BadCodes))
    assert "'Notes Lost'" in problems and "lower-case words joined by -" in problems
    assert "'image-in-failed-domain' is dr's own" in problems
    assert "'notes-archive-lost': title and action" in problems
    assert "maps 'notes-index' to 'nobody-declares'" in problems and "'notes-archive'" not in problems
    assert declaration_problems(NotesExporter) == []


def test_the_suite_names_a_destination_whose_writes_to_is_not_references():
    """planning_problems over destinations() whose writes_to a planner could not place."""
    from dr.contract import Destination, ExportContext
    from dr.contract.capabilities import complete
    from dr.testing.declarations import planning_problems

    class BadWritesTo(NotesExporter):
        def destinations(self, artifacts, rewrite):
            return [Destination(list(artifacts), None, "its own place", writes_to=["s3://bucket/"])]

    exporter = complete(BadWritesTo)(ExportContext("notes", NotesExporter.Options(folder="."), "."))
    problems = "\n".join(planning_problems(exporter, []))
    assert "writes_to must be a tuple of references" in problems
