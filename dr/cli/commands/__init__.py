"""The registry of dr's commands: one module each, listed here in the order `dr --help` shows
them. dr.cli.main builds its parser from COMMANDS and nothing else.

A command module parses its arguments, calls the library, prints, and picks the exit code. It
imports dr.cli.arguments, dr.cli.output, dr.cli.exitcodes and the library, never another
command module (import-linter holds them independent).
"""

from __future__ import annotations

from dr.cli.arguments import CommandSpec
from dr.cli.commands.advise import ADVISE
from dr.cli.commands.audit import AUDIT
from dr.cli.commands.backup import BACKUP
from dr.cli.commands.demo import DEMO
from dr.cli.commands.drill import DRILL
from dr.cli.commands.plugins import PLUGINS
from dr.cli.commands.prune import PRUNE
from dr.cli.commands.restore import RESTORE
from dr.cli.commands.snapshots import SNAPSHOTS
from dr.cli.commands.status import STATUS
from dr.cli.commands.unlock import UNLOCK
from dr.cli.commands.verify import VERIFY

COMMANDS: list[CommandSpec] = [BACKUP, SNAPSHOTS, VERIFY, RESTORE, PRUNE, PLUGINS, UNLOCK, DEMO, AUDIT, DRILL,
                               STATUS, ADVISE]
