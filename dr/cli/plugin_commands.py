"""Commands that plugins add to dr: the `dr.commands` entry-point group (issue 32, item 2).

A plugin distribution declares `[project.entry-points."dr.commands"] NAME = "module:SPEC"`, where
SPEC is a dr.cli.arguments.CommandSpec named NAME (its help line, a function that adds its
arguments to an argparse parser, and `run(args, out) -> exit code`). `dr NAME` then runs it with
dr's global options, output and exit-code mapping, exactly like a built-in command.

The group is read only when it can matter, so that a cron backup never pays for importlib.metadata
(85 ms, issue 15): when the command word is not one of dr's own, for `--help`, and for the shell
completion (which walks the whole parser). A plugin cannot replace a built-in command: one that
names a built-in is not loaded. A plugin that fails to load does not take dr down: `dr --help`
shows it with the reason, and running it fails (exit 1) with that reason.
"""

from __future__ import annotations

from dataclasses import dataclass

GROUP = "dr.commands"
REQUIRED = ("name", "help", "arguments", "run")


@dataclass(frozen=True)
class PluginCommand:
    """One entry point of the group: its name and `module:attribute`, and what loading it gave."""

    name: str
    value: str
    spec: object | None = None  # the CommandSpec, when it loaded
    error: str = ""  # why it did not

    @property
    def help(self) -> str:
        return self.spec.help if self.spec is not None else f"(plugin {self.value}: {self.error})"


def plugin_commands(builtin: set[str]) -> list[PluginCommand]:
    """The installed plugin commands, loaded, by name; a name dr uses is left out."""
    from importlib.metadata import entry_points

    found: dict[str, PluginCommand] = {}
    for ep in entry_points(group=GROUP):
        if ep.name not in builtin and ep.name not in found:
            found[ep.name] = _load(ep)
    return sorted(found.values(), key=lambda c: c.name)


def _load(ep) -> PluginCommand:
    try:
        spec = ep.load()
    except Exception as exc:  # a broken third-party plugin must not take dr down
        return PluginCommand(ep.name, ep.value, error=f"failed to load: {type(exc).__name__}: {exc}")
    missing = [a for a in REQUIRED if not hasattr(spec, a)]
    if missing:
        return PluginCommand(ep.name, ep.value, error=f"is not a dr CommandSpec (it has no {', '.join(missing)})")
    if spec.name != ep.name:
        return PluginCommand(ep.name, ep.value, error=f"declares the name {spec.name!r}, not {ep.name!r}")
    return PluginCommand(ep.name, ep.value, spec)


def refusing(command: PluginCommand):
    """The handler of a plugin command that did not load: its reason, exit 1."""
    def run(args, out) -> int:
        from dr.cli.exitcodes import Exit

        return out.failure(f"the plugin command '{command.name}' ({command.value}) {command.error}", Exit.FAILURE)
    return run
