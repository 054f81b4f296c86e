"""Finding exporters: the `dr.exporters` entry-point group, built-ins included.

dr's own exporters (BUILTIN) are its own distribution's entry points, read from its
entry_points.txt without importlib.metadata: a run whose plan uses only them (every cron backup
of a plan without plugins) does not pay for importing importlib.metadata (85 ms) and reading
every distribution's metadata, which cost an unchanged backup ~10% of its time
(docs/benchmarks.md, issue 15). There is no second list of them. A built-in name is always
dr's own exporter; a plugin that registers one is not used (`dr plugins` lists the built-in).
"""

from __future__ import annotations

import importlib
import os
import re
import sys
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Iterable

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint

from dr.contract.adapters import ADAPTERS
from dr.contract import CONTRACT_VERSION, SUPPORTED_VERSIONS, Exporter, ExporterOptions
from dr.contract.capabilities import complete, implemented

GROUP = "dr.exporters"
_OWN_DIST_INFO = re.compile(r"^dr-[^-]+\.dist-info$")  # dr's own, not a plugin's (dr_sqlite-1.0.dist-info)


def _group_in(text: str, group: str) -> dict[str, str]:
    """name -> value of one group of an entry_points.txt (the packaging spec's INI subset)."""
    found, current = {}, None
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("[") and line.endswith("]"):
            current = line[1:-1].strip()
        elif current == group and "=" in line and not line.startswith(("#", ";")):
            name, _, value = line.partition("=")
            found[name.strip()] = value.strip()
    return found


def _own_entry_points() -> dict[str, str]:
    """dr's own `dr.exporters` entry points, read from its installed entry_points.txt (a
    dr-*.dist-info beside the running package first, then on sys.path's site-packages, then the
    rest of sys.path: listing the standard library's folder alone costs 6 ms), else from the
    pyproject.toml of a source tree run without installing."""
    beside = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    packages = [p for p in sys.path if p.endswith(("site-packages", "dist-packages"))]
    for folder in dict.fromkeys([beside, *packages, *sys.path]):
        try:
            names = os.listdir(folder or ".")
        except OSError:
            continue
        for name in names:
            path = os.path.join(folder or ".", name, "entry_points.txt")
            if _OWN_DIST_INFO.match(name) and os.path.isfile(path):
                with open(path, encoding="utf-8") as handle:
                    return _group_in(handle.read(), GROUP)
    pyproject = os.path.join(beside, "pyproject.toml")
    if os.path.isfile(pyproject):
        import tomllib

        with open(pyproject, "rb") as handle:
            return dict(tomllib.load(handle).get("project", {}).get("entry-points", {}).get(GROUP, {}))
    return {}


# The built-ins: pyproject.toml's [project.entry-points."dr.exporters"], as installed
BUILTIN = _own_entry_points()


@dataclass(frozen=True)
class BuiltinEntry:
    """A built-in exporter's entry point, without importlib.metadata (same name, value, load())."""

    name: str
    value: str

    def load(self) -> object:
        module, _, attribute = self.value.partition(":")
        return getattr(importlib.import_module(module), attribute)


class PluginError(Exception):
    pass


@dataclass
class PluginInfo:
    name: str
    value: str  # module:Class, where it comes from
    summary: str
    contract_version: int  # the version the plugin implements (an older one runs through an adapter)
    error: str = ""
    restore_options: list[str] = field(default_factory=list)  # "--flag METAVAR: help"
    remap_kinds: list[str] = field(default_factory=list)
    # the plan options of its sources, from its options model (dr.contract.option_docs), as JSON
    options: list[dict] = field(default_factory=list)
    # the optional capabilities it implements, "name vN" (dr.contract.capabilities)
    capabilities: list[str] = field(default_factory=list)


class Registry:
    """The installed exporters, loaded lazily by name."""

    def __init__(self, eps: list[EntryPoint] | None = None):
        """`eps`: exactly these exporters; None: the installed ones (BUILTIN and plugins)."""
        self._found: dict | None = None if eps is None else {ep.name: ep for ep in eps}
        self._loaded: dict[str, type[Exporter]] = {}

    @property
    def _eps(self) -> dict:
        if self._found is None:  # the installed plugins: read only when a name is not built in
            from importlib.metadata import entry_points

            found = {ep.name: ep for ep in entry_points(group=GROUP)}
            found.update({name: BuiltinEntry(name, value) for name, value in BUILTIN.items()})
            self._found = found
        return self._found

    def _entry(self, name: str):
        if self._found is None and name in BUILTIN:
            return BuiltinEntry(name, BUILTIN[name])
        return self._eps.get(name)

    def names(self) -> list[str]:
        return sorted(self._eps)

    def get(self, name: str) -> type[Exporter]:
        if name not in self._loaded:
            entry = self._entry(name)
            if entry is None:
                raise PluginError(f"no exporter named '{name}' (installed: {', '.join(self.names())})")
            self._loaded[name] = self._load(entry)
        return self._loaded[name]

    def options_model(self, type_name: str) -> type[ExporterOptions] | None:
        return self.get(type_name).Options if self._entry(type_name) is not None else None

    def remap_kinds(self, names: Iterable[str] | None = None) -> dict[str, list[str]]:
        """Every remap kind an installed exporter (of `names`, if given: only those are
        imported) applies -> the exporters that apply it."""
        kinds: dict[str, list[str]] = {}
        wanted = None if names is None else set(names)
        for name in [n for n in self.names() if wanted is None or n in wanted]:
            try:
                cls = self.get(name)
            except PluginError:
                continue  # a broken plugin is reported by `dr plugins` and by plans that use it
            for kind in cls.remap_kinds:
                kinds.setdefault(kind.name, []).append(name)
        return kinds

    def info(self) -> list[PluginInfo]:
        from dr.contract.option_docs import option_docs  # only `dr plugins` lists options

        out = []
        for name in self.names():
            try:
                cls = self.get(name)
                version = getattr(cls, "adapted_from", cls.contract_version)
                options = [f"--{o.flag} {o.metavar}".rstrip() + f": {o.help}" for o in cls.restore_options]
                out.append(PluginInfo(name, self._eps[name].value, cls.summary, version, "", options,
                                      [k.name for k in cls.remap_kinds],
                                      [doc.to_json() for doc in option_docs(cls.Options)],
                                      [f"{c.name} v{c.version}" for c in implemented(cls)]))
            except PluginError as exc:
                out.append(PluginInfo(name, self._eps[name].value, "", 0, str(exc)))
        return out

    @staticmethod
    def _load(ep: EntryPoint) -> type[Exporter]:
        try:
            cls = ep.load()
        except Exception as exc:  # a broken third-party plugin must not take dr down
            raise PluginError(f"exporter '{ep.name}' ({ep.value}) failed to load: {exc}") from None
        if not (isinstance(cls, type) and issubclass(cls, Exporter)):
            raise PluginError(f"exporter '{ep.name}' ({ep.value}) is not a dr Exporter subclass")
        if cls.type_name != ep.name:
            raise PluginError(f"exporter '{ep.name}' declares type_name '{cls.type_name}'")
        version = getattr(cls, "contract_version", None)
        if version is None:
            raise PluginError(f"exporter '{ep.name}' ({ep.value}) does not declare contract_version: set "
                              f"`contract_version = {CONTRACT_VERSION}` in the class once it implements "
                              f"contract v{CONTRACT_VERSION} (docs/exporters.md)")
        if version not in SUPPORTED_VERSIONS:
            supported = ", ".join(f"v{v}" for v in SUPPORTED_VERSIONS)
            raise PluginError(f"exporter '{ep.name}' implements contract v{version}; "
                              f"this dr speaks {supported}")
        return complete(cls if version == CONTRACT_VERSION else ADAPTERS[version](cls))
