"""dr.testing's list of `dr restore`'s own flags (an exporter's restore option may not take one)
is the restore parser's: the conformance suite sits below the CLI and cannot ask it, so this
test keeps the two equal."""

from __future__ import annotations

from dr.cli.main import build_parser
from dr.testing.declarations import RESERVED_FLAGS


def test_reserved_flags_are_the_restore_commands_own():
    parser = build_parser()
    [commands] = [a for a in parser._actions if a.dest == "command"]
    restore = commands.choices["restore"]
    flags = {s[2:] for a in restore._actions for s in a.option_strings if s.startswith("--")}
    assert flags == set(RESERVED_FLAGS)
