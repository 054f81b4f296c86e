"""The optional capabilities of the contract: detected by the registry, completed with defaults.

A plugin that implements only the required Exporter is loaded, listed with no capability, and
answers every capability's question with its default; one that inherits a mixin, or only defines
one of its members, is listed with it. Each built-in inherits exactly the mixins it implements.
"""

from __future__ import annotations

from importlib.metadata import EntryPoint
from typing import Iterator

from dr.contract import CAPABILITIES, DrillComparison, ExportContext, ExporterOptions, Ordering, Planning, RestoredContent
from dr.contract.capabilities import complete, implemented, overrides
from dr.contract.registry import BUILTIN, Registry
from tests.exporters.test_registry import Current


class Bare(Current):
    """Only the required part (test_registry's plugin)."""

    type_name = "bare"


class Planned(Bare, Planning):
    type_name = "planned"


class Compared(Bare):
    """Defines a member of drill comparison without inheriting its mixin."""

    type_name = "compared"

    def restored_content(self, artifacts, reader, request) -> Iterator[RestoredContent]:
        return iter([RestoredContent("x", restored="a", backed_up="a")])


def _loaded(name: str, cls: str):
    registry = Registry([EntryPoint(name, f"{__name__}:{cls}", "dr.exporters")])
    return registry, registry.get(name)


def test_a_bare_exporter_loads_and_answers_every_capability_with_its_default():
    registry, cls = _loaded("bare", "Bare")
    assert issubclass(cls, Bare) and cls is not Bare
    assert all(issubclass(cls, c.mixin) for c in CAPABILITIES)
    exporter = cls(ExportContext("s", ExporterOptions(), "/"))
    assert exporter.ordering == Ordering() and exporter.scratch_destination("/x") == "/x"
    assert exporter.restore_bytes([]) == {"data_warmup": 0} and exporter.run_needs() is None
    assert exporter.verify_copies([], None, False) == [] and exporter.finding_codes == ()
    (info,) = registry.info()
    assert info.error == "" and info.capabilities == []
    assert not hasattr(Bare, "destinations")  # the required part is small: the class itself has none


def test_an_inherited_mixin_and_a_defined_member_are_both_detected():
    registry, cls = _loaded("planned", "Planned")
    assert [i.capabilities for i in registry.info()] == [["planning v1"]]
    registry, cls = _loaded("compared", "Compared")
    assert [i.capabilities for i in registry.info()] == [["drill-comparison v1"]]
    assert overrides(cls, "restored_content") and not overrides(cls, "scratch_destination")
    assert list(cls(ExportContext("s", ExporterOptions(), "/")).restored_content([], None, None))[0].item == "x"


def test_a_class_with_every_capability_is_not_wrapped():
    class Full(Bare, *[c.mixin for c in CAPABILITIES]):
        type_name = "full"

    assert complete(Full) is Full
    assert [c.name for c in implemented(Full)] == [c.name for c in CAPABILITIES]


def test_each_built_in_inherits_exactly_the_mixins_it_implements():
    """Explicit bases: a reader of a built-in's class line sees every capability it answers."""
    registry = Registry()
    for name in BUILTIN:
        completed = registry.get(name)
        original = vars(completed).get("completes", completed)
        detected = {c.mixin for c in implemented(original)}
        inherited = {c.mixin for c in CAPABILITIES if issubclass(original, c.mixin)}
        assert detected == inherited, f"{name}: implements {detected - inherited} without inheriting the mixin"
        assert detected, name
    assert DrillComparison in {c.mixin for c in implemented(registry.get("files"))}
