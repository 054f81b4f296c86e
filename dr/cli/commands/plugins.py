"""`dr plugins`: the installed exporters, their contract version, capabilities, plan options, restore options and
remap kinds."""

from __future__ import annotations

import argparse
import json

from dr.cli.arguments import CommandSpec
from dr.cli.commands import help_of
from dr.cli.exitcodes import Exit
from dr.cli.output import Output
from dr.contract.registry import Registry


def run(args: argparse.Namespace, out: Output) -> int:
    infos = Registry().info()
    for info in infos:
        state = f"ERROR: {info.error}" if info.error else info.summary
        out.say(f"{info.name:<14} contract v{info.contract_version}  {info.value}\n{'':<14} {state}")
        for option in info.restore_options:
            out.say(f"{'':<14} restore option {option}")
        if info.capabilities:
            out.say(f"{'':<14} capabilities: {', '.join(info.capabilities)}")
        if info.remap_kinds:
            out.say(f"{'':<14} remap kinds: {', '.join(info.remap_kinds)}")
        for option in info.options:
            out.say(f"{'':<14} plan option {_option(option)}")
    out.document({"exporters": [info.__dict__ for info in infos]})
    return Exit.FAILURE if any(i.error for i in infos) else Exit.OK


def _option(option: dict) -> str:
    """`paths (list[str], required): directories or files ...`"""
    default = "required" if option["required"] else f"default {json.dumps(option['default'])}"
    text = f"{option['name']} ({option['type']}, {default})"
    return f"{text}: {option['description']}" if option["description"] else text


PLUGINS = CommandSpec("plugins", help_of("plugins"), lambda p: None, run)
