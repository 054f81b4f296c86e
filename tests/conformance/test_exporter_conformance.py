"""The exporter conformance suite (dr.testing) over every installed exporter, built-ins included.

Each exporter gets one suite (one source, one first backup) per module; every check is its own
test. An installed exporter without a fixture here fails the run: CI covers every exporter.
"""

from __future__ import annotations

import pytest

from dr.exporters.registry import Registry
from dr.testing import CHECKS, ExporterConformance
from tests.conformance.builtin_fixtures import FIXTURES


def test_every_installed_exporter_has_a_fixture():
    installed = set(Registry().names())
    assert installed - set(FIXTURES) == set(), "installed exporters the conformance suite does not run"
    for name in installed:
        assert FIXTURES[name].exporter is Registry().get(name), f"{name}: the fixture tests another class"


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
