"""The Dockerfile's bytecode step, run for real against a tree laid out like the image's.

No Docker engine runs here (see ../shared/TEST-INFRA.md), so the image itself is not built: the
step's own command line, read from the Dockerfile, is run with this interpreter against a
temporary `lib/python3.11` holding a standard-library module, an installed package and
lib2to3-style Python 2 test data. bench/bench_image_startup.py measures what the step saves.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _step() -> str:
    with open(os.path.join(ROOT, "Dockerfile")) as handle:
        text = handle.read()
    install = text.index("pip install")
    found = re.search(r"^RUN (python -m compileall .*)$", text, re.MULTILINE)
    assert found, "the Dockerfile no longer compiles the standard library's bytecode"
    assert found.start() > install, "the bytecode step must run after pip install"
    return found.group(1)


def _write(path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_the_standard_library_is_compiled_and_test_data_and_packages_are_left(tmp_path):
    lib = tmp_path / "usr" / "local" / "lib" / "python3.11"
    _write(lib / "json" / "__init__.py", "VALUE = 1\n")
    _write(lib / "email" / "utils.py", "def f():\n    return 2\n")
    _write(lib / "lib2to3" / "tests" / "data" / "py2_grammar.py", 'print "Python 2 on purpose"\n')
    _write(lib / "idle_test" / "x.py", "print 'also Python 2'\n")
    _write(lib / "site-packages" / "pkg" / "mod.py", "X = 3\n")
    argv = shlex.split(_step().replace("/usr/local/lib/python3.11", str(lib)))
    done = subprocess.run([sys.executable] + argv[1:], capture_output=True, text=True,
                          env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    assert done.returncode == 0, done.stdout + done.stderr
    compiled = {p.relative_to(lib).parts[0] for p in lib.rglob("*.pyc")}
    assert compiled == {"json", "email"}  # pip compiles site-packages itself; test data is skipped
