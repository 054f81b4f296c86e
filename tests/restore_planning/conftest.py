"""Fixtures for restore-planning tests: a fresh platform (worlds.World) per test."""

from __future__ import annotations

import pytest

from tests.restore_planning.worlds import World


@pytest.fixture
def world(tmp_path) -> World:
    return World(tmp_path)


@pytest.fixture
def backed_up(world) -> World:
    world.backup()
    return world
