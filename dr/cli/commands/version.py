"""`dr version`: what a bug report or a compatibility question needs: dr's version, the
repository format it reads and writes, the exporter contract it speaks (and the older ones it
adapts), Python, and each installed exporter with the contract version it implements."""

from __future__ import annotations

import argparse
import platform

from dr import __version__
from dr.cli.arguments import CommandSpec
from dr.cli.commands import help_of
from dr.cli.exitcodes import Exit
from dr.cli.output import Output
from dr.contract import CONTRACT_VERSION, SUPPORTED_VERSIONS
from dr.contract.registry import Registry
from dr.repository.layout import FORMAT_VERSION


def run(args: argparse.Namespace, out: Output) -> int:
    exporters = [{"name": i.name, "contract_version": i.contract_version, "from": i.value, "error": i.error}
                 for i in Registry().info()]
    out.say(f"dr {__version__}\nrepository format {FORMAT_VERSION}\nexporter contract {CONTRACT_VERSION} "
            f"(also runs {', '.join(str(v) for v in sorted(SUPPORTED_VERSIONS) if v != CONTRACT_VERSION) or 'no other'})"
            f"\nPython {platform.python_version()} ({platform.python_implementation()})\nexporters:")
    out.say_lines([f"  {e['name']:<14} contract v{e['contract_version']}  {e['from']}"
                   + (f"  ERROR: {e['error']}" if e["error"] else "") for e in exporters])
    out.document({"dr": __version__, "repository_format": FORMAT_VERSION, "exporter_contract": CONTRACT_VERSION,
                  "exporter_contracts_supported": sorted(SUPPORTED_VERSIONS), "python": platform.python_version(),
                  "exporters": exporters})
    return Exit.FAILURE if any(e["error"] for e in exporters) else Exit.OK


VERSION = CommandSpec("version", help_of("version"), lambda p: None, run)
