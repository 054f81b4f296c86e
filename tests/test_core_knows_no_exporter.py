"""The core names no exporter (issue 32, item 2): what an exporter knows, it declares as data.

Walks the abstract syntax tree of every core module (dr outside the exporters' own packages
and modules) for a string constant that equals an installed exporter's type name, a finding
code it declares (Exporter.finding_codes) or a dependency kind it declares (lost_kind_codes,
origin_kinds, checked_kinds) that is not one of the shared kinds (dr.model.kinds). Docstrings are prose and not looked at. What the core still
names is listed below with the reason (and so is the same word meaning something else), as a ratchet: a new name fails the test, and so does a
listed one that is gone (take it off the list, so the list only shrinks).
"""

from __future__ import annotations

import ast
import os

from dr.contract.registry import Registry
from dr.model import kinds

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# dr/exporters/__init__.py is the package's own docstring, not an exporter: it is checked
CORE_IN_EXPORTERS = ("dr/exporters/__init__.py",)
STILL_NAMED = {
    ("dr/cli/commands/verify.py", "images"): "dr verify --images, the deprecated alias of --type images (one release)",
    # the demo (dr/demo/, beside drills, not the core's logic) walks a newcomer through the
    # built-ins: it writes a plan of built-in sources and reads back which ones it wrote
    **{("dr/demo/walkthrough.py", name): "the demo's plan is of built-in sources: it checks which it wrote"
       for name in ("kubernetes", "mlflow")},
    ("dr/demo/walkthrough.py", "checkpoints"): "the demo runs `dr advise checkpoints` on its training source",
}

# the same word with another meaning: not a name of the exporter
OTHER_MEANING = {
    ("dr/cli/commands/deploy.py", "helm"): "dr deploy render --format helm (a chart of the deployment)",
    **{(path, "volumes"): "a Pod spec's volumes field (the deployment's own pods)"
       for path in ("dr/deploy/helm.py", "dr/deploy/objects.py")},
    ("dr/cli/commands/plan.py", "files"): "the argparse name of dr plan validate's FILE arguments",
    ("dr/deploy/egress.py", "git"): "the git:// URL scheme's port",
    ("dr/demo/stand_ins.py", "git"): "the git program, which builds the demo's stand-in remote",
    ("dr/demo/walkthrough.py", "git"): "the git program, which lists the restored remote's refs",
    ("dr/model/regions.py", "secretsmanager"): "the AWS service's host label",
    ("dr/planner/steps.py", "images"): "the images role (a shared role name: docs/exporters.md, Ordering)",
    ("dr/cli/commands/advise.py", "checkpoints"): "the advice topic, training checkpoints: computed from any "
                                                  "exporter's checkpoint_saves (contract v2), not the exporter's",
}


def declared_names() -> set[str]:
    registry, names = Registry(), set()
    for type_name in registry.names():
        cls = registry.get(type_name)
        names.add(type_name)
        names.update(code.code for code in cls.finding_codes)
        names.update(cls.lost_kind_codes)
        names.update(cls.origin_kinds | cls.checked_kinds)
    return names - kinds.SHARED  # several producers write those; the core may name them


def core_modules() -> list[str]:
    found = []
    for folder, _, files in os.walk(os.path.join(ROOT, "dr")):
        for name in files:
            path = os.path.relpath(os.path.join(folder, name), ROOT)
            if not name.endswith(".py"):
                continue
            if path.startswith("dr/exporters/") and not path.startswith(CORE_IN_EXPORTERS):
                continue
            found.append(path)
    return sorted(found)


def _docstrings(tree: ast.AST) -> set[int]:
    return {id(node.body[0].value) for node in ast.walk(tree)
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
            and node.body and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}


def named_in(path: str, names: set[str]) -> set[tuple[str, str]]:
    with open(os.path.join(ROOT, path), encoding="utf-8") as handle:
        tree = ast.parse(handle.read(), path)
    prose = _docstrings(tree)
    return {(path, node.value) for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in names
            and id(node) not in prose}


def test_the_core_names_no_exporter_beyond_the_list():
    names = declared_names()
    found = set().union(*(named_in(path, names) for path in core_modules()))
    new = sorted(found - set(STILL_NAMED) - set(OTHER_MEANING))
    assert not new, ("core modules name an exporter, or a finding code or dependency kind an exporter declares; "
                     f"declare it in the exporter and read the declaration instead: {new}")
    gone = sorted((set(STILL_NAMED) | set(OTHER_MEANING)) - found)
    assert not gone, f"no longer named, take them off STILL_NAMED: {gone}"


def test_a_planted_name_is_found(tmp_path):
    """The walk sees a name in code (not in a docstring) in any module it is given."""
    planted = tmp_path / "planted.py"
    planted.write_text('"""mentions vault in prose"""\nKIND = "unseal-kms"\nif x == "vault":\n    pass\n')
    relative = os.path.relpath(planted, ROOT)
    assert named_in(relative, declared_names()) == {(relative, "unseal-kms"), (relative, "vault")}
