"""OpenBao fixtures: one populated raft server for the session, fresh ones for restore targets."""

from __future__ import annotations

import pytest

from tests.openbao import OpenBao, populate


@pytest.fixture(scope="session")
def openbao_source():
    """A raft OpenBao holding KV v2 secrets, a policy, an AppRole and a PKI mount (tests.openbao.populate)."""
    with OpenBao("openbao-source") as bao:
        bao.secrets = populate(bao)
        yield bao


@pytest.fixture
def openbao_target():
    """A fresh raft OpenBao, initialised and unsealed with its own keys: a restore target."""
    with OpenBao("openbao-target") as bao:
        yield bao
