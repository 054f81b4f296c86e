"""One emulated API server per test module, checked for internal errors at its end."""

from __future__ import annotations

import pytest

from tests.harness import EmulatedCluster


@pytest.fixture(scope="module")
def cluster(request):
    with EmulatedCluster(name=request.module.__name__.rsplit(".", 1)[-1]) as c:
        yield c
        assert c.errors == [], "the emulator hit internal errors:\n" + "\n".join(c.errors)
