"""What an exporter author supplies to the conformance suite: a ConformanceFixture.

Where it sits: dr.testing.exporter_conformance asks a fixture for a source to back up, a
destination to restore to, a way to tell whether that destination changed, a way to make one
restored item differ, and a source that cannot be backed up; and, optionally, what the source
holds and a way to change it, so restores are compared with the source and change tokens are seen
to change. Everything else (the plan, the repository, the snapshot writer, the reader) is dr's own
and real.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, ClassVar, Hashable

from dr.contract import ContentReader, Exporter
from dr.model.artifacts import Artifact


class NotChecked(Exception):
    """A check the fixture gives the suite no means to run (an optional member it lacks). Not an
    AssertionError, so a runner reports it as what it is: neither passed nor failed."""


class ConformanceFixture(ABC):
    """One exporter's test source and destinations, for one run of the suite.

    The suite calls build_source() once, then the other methods as its checks need them; each
    check that restores asks for a new destination(). close() is called at the end.
    """

    #: the exporter class under test: importable by module and name, installed or not
    exporter: ClassVar[type[Exporter]]
    #: the plan's `sensitivity:` for the source (None: the exporter decides)
    sensitivity: ClassVar[str | None] = None

    @abstractmethod
    def build_source(self, workdir: str) -> None:
        """Create the source to back up under `workdir`, a new empty directory of the suite's
        (files, a git remote, a cluster's objects ...). It must hold more than one item.
        `workdir` is also the folder of the suite's plans: relative paths in options resolve
        against it."""

    @abstractmethod
    def source_options(self) -> dict[str, Any]:
        """The source's options as a plan writes them (YAML-serializable)."""

    @abstractmethod
    def broken_options(self) -> dict[str, Any]:
        """Options for a source of this exporter that cannot be backed up (a missing path, an
        unreachable server). Its backup must fail, or record an error-severity finding."""

    @abstractmethod
    def destination(self) -> str:
        """A new destination, in the state a restore starts from (empty, or holding only what a
        real one always holds): the RestoreRequest.to of one check."""

    @abstractmethod
    def fingerprint(self, to: str) -> Hashable:
        """What `to` holds, comparable with ==: equal exactly when the restorable content is
        equal (leave out what a server stamps on every write, such as resourceVersion)."""

    @abstractmethod
    def perturb(self, to: str) -> str:
        """Make one restored item at `to` differ from the backup; return that item's
        Outcome.item (restore must then say CONFLICT for it until --overwrite)."""

    def source_fingerprint(self) -> Hashable:
        """What the source holds now, comparable with fingerprint(to) of a destination restored
        from a backup of it: equal exactly when that restore holds the source's restorable
        content (items by their paths or identities relative to the destination, not the
        source's absolute place; leave out what restore skips by design). Optional: without
        it, restore_equals_source and changed_source_is_read_again raise NotChecked."""
        raise NotChecked("the fixture has no source_fingerprint")

    def change_source(self) -> str:
        """Change one item's restorable content at the source, as its users would, so that a
        correct exporter must export it again at the next backup; return the identity of the
        artifact that holds it (new or existing). Called at most once, by the last check.
        Optional: without it, changed_source_is_read_again raises NotChecked."""
        raise NotChecked("the fixture has no change_source")

    def remap(self) -> dict[str, str]:
        """RestoreRequest.remap for every restore of the suite."""
        return {}

    def expected_items(self, artifacts: list[Artifact], reader: ContentReader) -> set[str]:
        """Every Outcome.item a restore of `artifacts` must report, once each. The default is
        one item per artifact, named by its identity; override it when restore names items
        otherwise (one per object inside an artifact, one per chosen checkpoint ...)."""
        return {artifact.identity for artifact in artifacts}

    def close(self) -> None:
        """Stop and remove what build_source() and destination() started."""
