"""The layers of .importlinter hold, and every module says where it sits in the flow.

Layers (top to bottom): cli; drills | testing | metrics | verifying | status; backup | restore |
audit | deploy (each layer's modules independent of one another); planner; exporters; contract;
repository; model; kits. import-linter checks that no lower layer imports a higher one, that
exporters are independent of one another, that the core (and the contract layer itself) reaches
no exporter by import (both contracts name the exporters by wildcard, with no exemption, so a
new exporter is held to them without editing the file),
that stores are self-contained, and that the CLI's command modules do not import one another.
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


@pytest.mark.parametrize("module, line, contract", [
    ("dr/planner/planning.py", "import dr.exporters.git", "use exporters only through the contract"),
    ("dr/exporters/git.py", "import dr.exporters.files", "exporters independent of one another"),
    # an exporter that no list names (the contracts use wildcards), and the core reaching into it
    ("dr/exporters/acme/__init__.py", "import dr.exporters.git", "exporters independent of one another"),
    ("dr/exporters/git.py", "import dr.exporters.acme", "exporters independent of one another"),
    ("dr/audit/dependency_findings.py", "import dr.exporters.acme", "use exporters only through the contract"),
    ("dr/kits/validators.py", "import dr.model.kinds", "dr layers"),
    ("dr/contract/pod_needs.py", "import dr.audit.findings", "dr layers"),
    ("dr/repository/stores/local.py", "import dr.repository.catalogs", "stores import nothing of dr"),
    ("dr/cli/commands/drill.py", "import dr.cli.commands.restore", "command modules independent"),
])
def test_each_contract_refuses_a_planted_violation(tmp_path, module, line, contract):
    """The contracts are not vacuous: the same check over a copy of dr with one bad import fails,
    naming the contract."""
    import shutil

    shutil.copytree(ROOT / "dr", tmp_path / "dr", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / ".importlinter", tmp_path / ".importlinter")
    (tmp_path / "dr/exporters/acme").mkdir()  # a new exporter package, in no list of .importlinter
    (tmp_path / "dr/exporters/acme/__init__.py").write_text('"""A new exporter."""\n')
    with open(tmp_path / module, "a", encoding="utf-8") as handle:
        handle.write(f"\n{line}  # planted by tests/test_layers.py\n")
    run = subprocess.run([str(LINT_IMPORTS), "--no-cache"], cwd=tmp_path, capture_output=True, text=True,
                         timeout=300, env={"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"})
    assert run.returncode == 1, run.stdout + run.stderr
    assert "Contracts: " in run.stdout and " 1 broken" in run.stdout
    broken = run.stdout.split("Broken contracts", 1)[1]
    assert contract in broken, run.stdout


def test_nothing_under_the_exporters_is_exempt():
    """The two exporter contracts hold every module under dr.exporters with no ignore rule."""
    text = (ROOT / ".importlinter").read_text()
    for section in ("exporters-independent", "core-through-contract"):
        body = text.split(f"[importlinter:contract:{section}]", 1)[1].split("[importlinter:", 1)[0]
        assert "ignore_imports" not in body and "allow_indirect_imports" not in body, section


def test_every_built_in_entry_point_is_under_the_wildcards():
    """pyproject.toml's exporters each live in their own module or package directly under
    dr.exporters, which the two exporter contracts match by `dr.exporters.*`; nothing under
    dr.exporters is exempt from them (the contract layer and the kit live outside it)."""
    import tomllib

    with open(ROOT / "pyproject.toml", "rb") as handle:
        entry_points = tomllib.load(handle)["project"]["entry-points"]["dr.exporters"]
    assert len(entry_points) >= 12
    for name, value in entry_points.items():
        parts = value.split(":", 1)[0].split(".")
        assert parts[:2] == ["dr", "exporters"] and len(parts) >= 3, (name, value)
        assert (ROOT / "dr" / "exporters" / parts[2]).exists() or (ROOT / "dr" / "exporters" / f"{parts[2]}.py").exists()

