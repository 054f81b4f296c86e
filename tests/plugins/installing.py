"""Installing a test plugin the way a third party's is installed: a distribution whose
metadata declares a `dr.exporters` entry point, found on sys.path by importlib.metadata."""

from __future__ import annotations

from pathlib import Path


def install_distribution(site: Path, name: str, entry_points: dict[str, str], group: str = "dr.exporters") -> Path:
    """Write `<site>/<name>-1.0.dist-info` declaring `entry_points` (type -> module:Class) in `group`."""
    info = site / f"{name}-1.0.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    lines = "".join(f"{k} = {v}\n" for k, v in entry_points.items())
    (info / "entry_points.txt").write_text(f"[{group}]\n{lines}")
    return info


def forget_modules(package: str) -> None:
    """Drop `package` and its submodules from sys.modules, so the next import finds the
    package on the current sys.path (tests write plugin packages of the same name)."""
    import sys

    for name in [m for m in sys.modules if m == package or m.startswith(package + ".")]:
        del sys.modules[name]


def run_without_entry_points(code: str):
    """Run `code` in a fresh interpreter whose importlib.metadata.entry_points raises: what it
    prints shows it never read the installed distributions' entry points."""
    import os
    import subprocess
    import sys

    prelude = ("import importlib.metadata\n"
               "def refuse(**_):\n    raise AssertionError('entry points read')\n"
               "importlib.metadata.entry_points = refuse\n")
    env = {**os.environ, "PYDANTIC_DISABLE_PLUGINS": "__all__"}  # as dr's entry point sets it
    return subprocess.run([sys.executable, "-c", prelude + code], capture_output=True, text=True, timeout=60, env=env)
