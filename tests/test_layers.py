"""The layers of .importlinter hold, and every module says where it sits in the flow.

Layers (top to bottom): cli; drills | testing; backup | restore | audit (each layer's modules
independent of one another); exporters; repository; model. import-linter checks that no lower
layer imports a higher one.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"
MODULES = sorted(p.relative_to(ROOT) for p in (ROOT / "dr").rglob("*.py"))


def test_import_layers_hold():
    assert LINT_IMPORTS.exists(), f"{LINT_IMPORTS} is missing: install the test extra (import-linter)"
    run = subprocess.run([str(LINT_IMPORTS), "--no-cache"], cwd=ROOT, capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0, f"lint-imports failed (exit {run.returncode}):\n{run.stdout}\n{run.stderr}"


@pytest.mark.parametrize("path", MODULES, ids=[str(p) for p in MODULES])
def test_every_module_has_a_docstring(path):
    tree = ast.parse((ROOT / path).read_text(), filename=str(path))
    docstring = ast.get_docstring(tree)
    assert docstring and docstring.strip(), f"{path} has no module docstring saying where it sits in the flow"
