"""Loading exporters through the entry-point registry: what a plugin must declare."""

from __future__ import annotations

from importlib.metadata import EntryPoint
from pathlib import Path
from typing import Iterator

import pytest

from dr.contract import CONTRACT_VERSION, Exporter, ExporterOptions
from dr.contract.registry import PluginError, Registry


class _Plugin(Exporter):
    summary = "test plugin"
    Options = ExporterOptions

    def discover(self) -> Iterator:
        return iter(())

    def export(self, sink) -> None:
        pass

    def restore(self, artifacts, reader, request) -> Iterator:
        return iter(())


class Unversioned(_Plugin):
    """Written without saying which contract it implements."""

    type_name = "unversioned"


class Future(_Plugin):
    type_name = "future"
    contract_version = CONTRACT_VERSION + 1


class Current(_Plugin):
    type_name = "current"
    contract_version = CONTRACT_VERSION


def _registry(name: str, cls: str) -> Registry:
    return Registry([EntryPoint(name, f"{__name__}:{cls}", "dr.exporters")])


def test_a_plugin_that_does_not_declare_its_contract_version_is_refused_with_the_fix():
    with pytest.raises(PluginError) as err:
        _registry("unversioned", "Unversioned").get("unversioned")
    message = str(err.value)
    assert "does not declare contract_version" in message
    assert f"contract_version = {CONTRACT_VERSION}" in message and "Unversioned" in message


def test_a_plugin_for_another_contract_version_is_refused_and_dr_plugins_says_why():
    registry = _registry("future", "Future")
    with pytest.raises(PluginError, match=f"implements contract v{CONTRACT_VERSION + 1}"):
        registry.get("future")
    (info,) = registry.info()
    assert info.error and "future" in info.error


def test_a_plugin_that_declares_the_current_version_loads():
    assert issubclass(_registry("current", "Current").get("current"), Current)


def test_every_installed_exporter_declares_the_current_version():
    registry = Registry()
    assert {"git", "files", "kubernetes", "checkpoints"} <= set(registry.names())
    for name in registry.names():
        assert registry.get(name).contract_version == CONTRACT_VERSION


class Legacy(_Plugin):
    """A v1 plugin: no declarations, and it heard every remap as <kind>:<old>."""

    type_name = "legacy"
    contract_version = 1


def test_a_v1_plugin_loads_through_its_adapter_and_keeps_hearing_every_remap():
    registry = _registry("legacy", "Legacy")
    cls = registry.get("legacy")
    assert issubclass(cls, Legacy) and cls.contract_version == CONTRACT_VERSION
    (info,) = registry.info()
    assert (info.error, info.contract_version) == ("", 1)  # dr plugins shows the plugin's own version
    from dr.contract import ExportContext

    exporter = cls(ExportContext("s", ExporterOptions(), "/"))
    assert exporter.request_remap("registry", "old.example", "new.example") == {"registry:old.example": "new.example"}
    # a v2 exporter hears only the kinds it declares
    assert _registry("current", "Current").get("current")(ExportContext("s", ExporterOptions(), "/")).request_remap("registry", "a", "b") == {}
    assert exporter.ordering.roles == frozenset() and exporter.scratch_destination("/x") == "/x"


def test_remap_kinds_of_the_installed_exporters_name_who_applies_them():
    kinds = Registry().remap_kinds()
    assert kinds["namespace"] == ["kubernetes", "volumes"] and kinds["git-remote"] == ["git"]
    assert kinds["bucket"] == ["checkpoints"]


def test_the_builtins_are_the_packages_entry_points_and_pyprojects():
    # BUILTIN is read from dr's installed entry_points.txt without importlib.metadata: it must be
    # what importlib.metadata reads, and what pyproject.toml declares (no second list)
    import tomllib
    from importlib.metadata import distribution

    from dr.contract.registry import BUILTIN, GROUP, _group_in

    installed = {ep.name: ep.value for ep in distribution("dr").entry_points if ep.group == GROUP}
    with open(Path(__file__).resolve().parents[2] / "pyproject.toml", "rb") as handle:
        declared = tomllib.load(handle)["project"]["entry-points"][GROUP]
    assert BUILTIN == installed == declared and len(BUILTIN) >= 12
    text = "[console_scripts]\ndr = x:y\n\n[dr.exporters]\n# a comment\na = m:A\n b = n:B \n[other]\nc = o:C\n"
    assert _group_in(text, GROUP) == {"a": "m:A", "b": "n:B"}


def test_a_builtin_exporter_loads_without_reading_the_installed_metadata():
    from tests.plugins.installing import run_without_entry_points

    done = run_without_entry_points("from dr.contract.registry import Registry\nregistry = Registry()\n"
                                    "cls = registry.get('files')\nassert registry.options_model('files') is cls.Options\n"
                                    "print(cls.__name__)")
    assert done.stdout.split() == ["FilesExporter"], done.stderr
    # any other name reads the installed entry points: plugins are still found
    assert "files" in Registry().names() and Registry().options_model("no-such-exporter") is None
