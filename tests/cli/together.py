"""Starting several real `dr` processes at the same moment.

Each child imports dr, says "ready", then waits on a start file: once every child is ready the
file is created, so their first reads of a repository (config, locks, blob listing) really
overlap, instead of being spread over the children's import times.
"""

from __future__ import annotations

import os
import subprocess
import sys

_WAIT_THEN_RUN = (
    "import os, sys, time\n"
    "import dr.cli.main as cli\n"
    "go = sys.argv[1]\n"
    "print('ready', flush=True)\n"
    "while not os.path.exists(go):\n"
    "    time.sleep(0.001)\n"
    "sys.argv = ['dr'] + sys.argv[2:]\n"
    "cli.entry()\n"
)


def run_together(go: str, commands: list[list[str]], timeout: float = 180) -> list[tuple[int, str]]:
    """Start every command (dr's arguments), release them at once through the file `go`;
    return (exit code, stderr) of each, in order."""
    children = [subprocess.Popen([sys.executable, "-c", _WAIT_THEN_RUN, go, *command], stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True, env=os.environ.copy()) for command in commands]
    for child in children:
        assert child.stdout.readline().strip() == "ready"
    open(go, "w").close()
    results = []
    for child in children:
        _, err = child.communicate(timeout=timeout)
        results.append((child.returncode, err))
    return results
