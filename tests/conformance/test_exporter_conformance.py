"""The exporter conformance suite (dr.testing) over every installed exporter, built-ins included.

Each exporter gets one suite (one source, one first backup) per module; every check is its own
test. An installed exporter without a fixture here fails the run: CI covers every exporter.
"""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

from dr.contract.registry import Registry
from dr.testing import CHECKS, ConformanceFixture, ExporterConformance, verify_exporter
from tests.conformance.builtin_fixtures import FIXTURES
from tests.plugins.installing import forget_modules


def test_every_installed_exporter_has_a_fixture():
    installed = set(Registry().names())
    assert installed - set(FIXTURES) == set(), "installed exporters the conformance suite does not run"
    for name in installed:
        assert issubclass(Registry().get(name), FIXTURES[name].exporter), f"{name}: the fixture tests another class"


@pytest.fixture(scope="module", params=sorted(FIXTURES))
def suite(request, tmp_path_factory):
    fixture = FIXTURES[request.param]()
    try:
        yield ExporterConformance(fixture, str(tmp_path_factory.mktemp(f"conformance-{request.param}")))
    finally:
        fixture.close()


@pytest.mark.parametrize("check", CHECKS)
def test_conformance(suite, check):
    getattr(suite, f"check_{check}")()


# -- the document: every check and fixture member described, its example run -----------------------
DOC = Path(__file__).resolve().parents[2] / "docs" / "exporters.md"


def _section() -> str:
    return DOC.read_text().split("\n## Conformance suite\n", 1)[1].split("\n## ", 1)[0]


def test_every_check_and_fixture_member_is_documented():
    section = _section()
    members = [n for n in vars(ConformanceFixture) if not n.startswith("_")] + ["exporter", "sensitivity"]
    missing = [n for n in [*CHECKS, *members] if f"`{n}" not in section]
    assert missing == [], "not described in docs/exporters.md, section Conformance suite"


def test_the_documented_example_passes(tmp_path, monkeypatch):
    blocks = re.findall(r"^```python\n(.*?)^```", DOC.read_text(), re.M | re.S)
    package = tmp_path / "plugin" / "acme_dr"
    (package / "tests").mkdir(parents=True)
    for path, marker in [("__init__.py", None), ("tests/__init__.py", None),
                         ("sqlite.py", "# example: acme_dr/sqlite.py"),
                         ("tests/test_conformance.py", "# example: acme_dr/tests/test_conformance.py")]:
        (package / path).write_text("" if marker is None else next(b for b in blocks if b.startswith(marker)))
    monkeypatch.syspath_prepend(str(tmp_path / "plugin"))
    forget_modules("acme_dr")  # another test may have imported its own acme_dr package
    example = importlib.import_module("acme_dr.tests.test_conformance")
    assert verify_exporter(example.SqliteFixture(), str(tmp_path / "suite")) == [], "every check runs"
