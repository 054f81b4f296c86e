"""Every module dr imports comes with a plain `pip install .` (issue 30, point 1).

The container image and `pip install dr` users get [project].dependencies and what those pull in,
nothing else. A module that only an extra brings (the test extra pulls in cryptography through
moto, for example) passes every test in a developer's venv and fails in the image: this test reads
every import in dr/ (lazy ones inside functions included) and names the ones that no declared
dependency provides. Files that may use an extra are listed in EXTRA_FILES with the extra.
"""

from __future__ import annotations

import ast
import importlib.metadata as metadata
import re
import sys
import tomllib
from fnmatch import fnmatch
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# The demo's training runs make real PyTorch DCP checkpoints: torch comes with `.[demo]`, and the
# demo says what it left out when torch is absent (dr/demo/checkpoints.py: torch_available).
EXTRA_FILES = {"dr/demo/checkpoints.py": "demo", "dr/training/examples/plain_pytorch.py": "demo"}


def _name(requirement: str) -> str:
    return re.split(r"[\s\[<>=!~;(]", requirement.strip(), maxsplit=1)[0].lower().replace("_", "-")


def closure(roots: list[str]) -> set[str]:
    """The distributions these requirements install, each with what it requires (extras left out)."""
    seen, todo = set(), [_name(r) for r in roots]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        try:
            requires = metadata.requires(name) or []
        except metadata.PackageNotFoundError:
            continue
        todo += [_name(r) for r in requires if "extra ==" not in r]
    return seen


def imported_modules(path: Path) -> list[tuple[str, int]]:
    """Top-level names of every absolute import in the file, with its line."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(alias.name.split(".")[0], node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.module.split(".")[0], node.lineno))
    return found


def undeclared(package_dir: Path, project: dict, extra_files: dict[str, str]) -> list[str]:
    base = closure(project.get("dependencies", []))
    extras = project.get("optional-dependencies", {})
    providers = {module: {d.lower().replace("_", "-") for d in dists}
                 for module, dists in metadata.packages_distributions().items()}
    own = set(sys.stdlib_module_names) | {package_dir.name, "__future__"}
    problems = []
    for path in sorted(package_dir.rglob("*.py")):
        relative = path.relative_to(package_dir.parent).as_posix()
        allowed = base
        for pattern, extra in extra_files.items():
            if fnmatch(relative, pattern):
                allowed = base | closure(extras.get(extra, []))
        for module, line in imported_modules(path):
            if module not in own and not providers.get(module, set()) & allowed:
                dists = ", ".join(sorted(providers.get(module, []))) or "no installed distribution"
                problems.append(f"{relative}:{line} imports {module!r} ({dists})")
    return problems


def _project() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def test_every_import_of_dr_comes_with_a_plain_install():
    problems = undeclared(ROOT / "dr", _project(), EXTRA_FILES)
    assert not problems, ("`pip install .` does not bring these imports; declare them in "
                          "[project].dependencies (or keep them to a file EXTRA_FILES lets use an "
                          "extra):\n  " + "\n  ".join(problems))


def test_an_import_only_an_extra_brings_is_found(tmp_path):
    # moto is in the test extra only: a module importing it lazily must be named
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("import yaml\n")
    (package / "lazy.py").write_text("def f():\n    from moto import mock_aws\n    return mock_aws\n")
    problems = undeclared(package, _project(), {})
    assert problems == ["pkg/lazy.py:2 imports 'moto' (moto)"]


def test_an_extra_covers_only_the_files_it_is_given_for(tmp_path):
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "demo_part.py").write_text("import torch\n")
    (package / "core.py").write_text("import torch\n")
    problems = undeclared(package, _project(), {"pkg/demo_part.py": "demo"})
    assert problems == ["pkg/core.py:1 imports 'torch' (torch)"]
